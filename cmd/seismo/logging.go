package main

import (
	"io"
	"log/slog"

	"github.com/seismo-agent/seismo/internal/config"
)

// newLogger builds the agent's logger from the log section. The level is a
// LevelVar so that a reload can change it.
func newLogger(w io.Writer, c config.LogConfig) (*slog.Logger, *slog.LevelVar, error) {
	lvl, err := config.ParseLevel(c.Level)
	if err != nil {
		return nil, nil, err
	}
	level := new(slog.LevelVar)
	level.Set(lvl)
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if c.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(h), level, nil
}
