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
	local, err := datasource.NewLocal(datasource.LocalOptions{Queryable: st, Logger: a.logger})
	if err != nil {
		return nil, err
	}
	c := &collected{store: st, local: local, sources: map[string]datasource.Source{"local": local}}
	for _, rc := range cfg.Datasources.Remote {
		r, err := datasource.NewRemote(rc)
		if err != nil {
			return nil, err
		}
		c.sources[rc.Name] = r
	}

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
		if cur := a.config(); !reflect.DeepEqual(cur.Datasources, next.Datasources) {
			a.logger.Warn("datasources changed; restart seismo to apply it")
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
		Queryable: st, Logger: a.logger,
		Timeout: cfg.HTTP.QueryTimeout, MaxSamples: cfg.HTTP.QueryMaxSamples,
		MaxConcurrent: cfg.HTTP.QueryConcurrency(),
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
