package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/alecthomas/kingpin/v2"
)

// version and revision are set by "make build":
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.revision=abc123"
//
// Without them, buildVersion falls back to what the Go toolchain recorded.
var (
	version  string
	revision string
)

// buildVersion describes this binary.
type buildVersion struct {
	Version, Revision, GoVersion string
}

// getBuildVersion returns the -ldflags values, filled in from
// debug.ReadBuildInfo where they are missing.
func getBuildVersion() buildVersion {
	v := buildVersion{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && v.Revision == "" {
				v.Revision = s.Value
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	if v.Revision == "" {
		v.Revision = "unknown"
	}
	return v
}

func (v buildVersion) String() string {
	return fmt.Sprintf("seismo, version %s (revision: %s, go: %s)", v.Version, v.Revision, v.GoVersion)
}

func registerVersion(app *kingpin.Application, cli *cliEnv) {
	app.Command("version", "Print the version, revision and Go version.").
		Action(cli.action(func(context.Context) error {
			_, err := fmt.Fprintln(cli.stdout, getBuildVersion())
			return err
		}))
}
