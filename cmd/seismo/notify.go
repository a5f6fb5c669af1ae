package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/setup"
	"github.com/seismo-agent/seismo/rules"
)

// wireNotify builds the notification dispatcher from cfg.Notify, mounts the
// silences and drafts APIs and registers its part of reload. It returns the
// function the rules engine hands alerts to and the service to add after
// the rules engine, so that on shutdown rules stop first and notify can
// still queue what they sent.
func wireNotify(a *agent, cfg *config.Config) (rules.NotifyFunc, service, error) {
	d, err := notify.New(notify.Options{
		Logger:  a.logger,
		Metrics: a.metricsSet(),
		DataDir: filepath.Join(cfg.DataDir, "notify"),
	})
	if err != nil {
		return nil, service{}, err
	}
	deps := setup.Deps{ExternalURL: cfg.HTTP.ExternalURLOrDefault()}
	built, err := setup.Build(&cfg.Notify, deps)
	if err == nil {
		err = d.ApplyConfig(built)
	}
	if err != nil {
		_ = d.Close()
		return nil, service{}, fmt.Errorf("notify: %w", err)
	}
	a.addReloader(reloader{name: "notify", prepare: func(_ context.Context, next *config.Config) (func(), error) {
		nb, err := setup.Build(&next.Notify, setup.Deps{ExternalURL: next.HTTP.ExternalURLOrDefault()})
		if err != nil {
			return nil, fmt.Errorf("notify: %w", err)
		}
		return func() {
			if err := d.ApplyConfig(nb); err != nil {
				a.logger.Error("notify config not applied", "err", err) // unreachable: Build returns a route
			}
		}, nil
	}})
	a.web.Handle("GET /api/v1/silences", d.SilencesHandler())
	a.web.HandleAdmin("POST /api/v1/silences", d.SilencesHandler())
	a.web.HandleAdmin("DELETE /api/v1/silences/{id}", d.SilencesHandler())
	a.web.Handle("GET /api/v1/drafts", d.DraftsHandler())
	a.web.Handle("GET /api/v1/drafts/{id}", d.DraftsHandler())
	a.ui.silences, a.ui.drafts, a.ui.silencedBy = d.SilencesHandler(), d.DraftsHandler(), d.SilencedBy

	fn := func(ctx context.Context, alerts ...*model.Alert) { d.Notify(ctx, alerts...) }
	svc := service{name: "notify", run: func(ctx context.Context) error {
		defer d.Close()
		return d.Run(ctx)
	}}
	return fn, svc, nil
}
