package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/seismo-agent/seismo/collectors"
	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/store"
)

// collected is what the collection side hands to the rules engine: the
// store, the "local" source over it, every named source, and a function
// that stores recording-rule results.
type collected struct {
	store   *store.Store
	local   *datasource.Local
	sources map[string]datasource.Source
	// remotes are the remote sources in force with the config each was
	// built from, so a reload rebuilds only those that changed.
	remotes map[string]remoteSource
}

type remoteSource struct {
	cfg    datasource.RemoteConfig
	remote *datasource.Remote
}

// buildSources returns the named sources for cfg: "local" and one per
// remote, reusing a running remote whose config is unchanged (and its
// connections). Nothing running is touched.
func (c *collected) buildSources(cfg datasource.Config) (map[string]datasource.Source, map[string]remoteSource, error) {
	sources := map[string]datasource.Source{"local": c.local}
	remotes := map[string]remoteSource{}
	for _, rc := range cfg.Remote {
		if old, ok := c.remotes[rc.Name]; ok && reflect.DeepEqual(old.cfg, rc) {
			sources[rc.Name], remotes[rc.Name] = old.remote, old
			continue
		}
		r, err := datasource.NewRemote(rc)
		if err != nil {
			return nil, nil, err
		}
		sources[rc.Name], remotes[rc.Name] = r, remoteSource{cfg: rc, remote: r}
	}
	return sources, remotes, nil
}

// useSources makes sources and remotes the ones in force and releases the
// idle connections of remotes no longer used.
func (c *collected) useSources(sources map[string]datasource.Source, remotes map[string]remoteSource) {
	for name, old := range c.remotes {
		if remotes[name].remote != old.remote {
			_ = old.remote.Close()
		}
	}
	c.sources, c.remotes = sources, remotes
}

// wireCollect builds the store, the collectors' scheduler, the local and
// remote datasources and the query API from cfg, and registers them with
// the agent: store retention and the scheduler as services, their part of
// reload, and the read API (/api/v1/query, query_range, labels,
// label/{name}/values, series).
func wireCollect(a *agent, cfg *config.Config) (*collected, error) {
	st, err := store.New(store.Options{
		Config:       cfg.Storage,
		Logger:       a.logger,
		Metrics:      a.metricsSet(),
		SnapshotFile: filepath.Join(cfg.DataDir, "store.snapshot"),
	})
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	sched, err := collectors.New(collectors.Options{Config: cfg.Collectors, Store: st, Logger: a.logger, Metrics: a.metricsSet()})
	if err != nil {
		return nil, fmt.Errorf("collectors: %w", err)
	}
	local, err := datasource.NewLocal(datasource.LocalOptions{Queryable: st, Logger: a.logger, Types: st.MetricTypes})
	if err != nil {
		return nil, err
	}
	c := &collected{store: st, local: local}
	sources, remotes, err := c.buildSources(cfg.Datasources)
	if err != nil {
		return nil, fmt.Errorf("datasources: %w", err)
	}
	c.useSources(sources, remotes)

	// Services stop in the order added: the collectors first, so their
	// staleness markers are in the store's snapshot at exit.
	a.addService(service{name: "collectors", run: sched.Run})
	a.addService(service{name: "store", run: st.Run})
	a.addReloader(reloader{name: "collectors", prepare: func(_ context.Context, next *config.Config) (func(), error) {
		if err := next.Storage.Validate(); err != nil {
			return nil, fmt.Errorf("storage: %w", err)
		}
		commit, err := sched.Prepare(next.Collectors)
		if err != nil {
			return nil, fmt.Errorf("collectors: %w", err)
		}
		return func() {
			_ = st.ApplyConfig(next.Storage) // validated above
			commit()
		}, nil
	}})
	// The query API gets an engine of its own, bound by the http.query_*
	// limits, so that a heavy query from a client cannot fail rule
	// evaluation and rules are not held to the API's limits.
	apiLocal, err := datasource.NewLocal(datasource.LocalOptions{
		Queryable: st, Logger: a.logger, Types: st.MetricTypes,
		Timeout: cfg.HTTP.QueryTimeout, MaxSamples: cfg.HTTP.QueryMaxSamples,
		MaxConcurrent: cfg.HTTP.QueryConcurrency(), CPUShare: cfg.HTTP.QueryCPUShare(),
	})
	if err != nil {
		return nil, err
	}
	api := datasource.NewAPI(apiLocal, nil)
	api.MaxPoints = cfg.HTTP.QueryMaxPoints
	for _, m := range []string{"GET", "POST"} {
		a.web.Handle(m+" /api/v1/query", api.QueryHandler())
		a.web.Handle(m+" /api/v1/query_range", api.QueryRangeHandler())
		a.web.Handle(m+" /api/v1/labels", api.LabelsHandler())
		a.web.Handle(m+" /api/v1/series", api.SeriesHandler())
		a.web.Handle(m+" /api/v1/metadata", api.MetadataHandler())
	}
	a.web.Handle("GET /api/v1/label/{name}/values", api.LabelValuesHandler())
	a.ui.targets = sched.Targets
	return c, nil
}

// record stores recording-rule results in the embedded store, stamped ts.
// Each sample must carry its metric name.
func (c *collected) record(_ context.Context, ts time.Time, v promql.Vector) error {
	app := c.store.Appender()
	var errs []error
	for _, s := range v {
		if _, err := app.Append(store.SeriesRef{}, s.Metric, ts.UnixMilli(), s.F); err != nil {
			errs = append(errs, fmt.Errorf("record %s: %w", s.Metric, err))
		}
	}
	app.Commit()
	return errors.Join(errs...)
}
