package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/seismo-agent/seismo/internal/config"
)

// checkHelp is the help of the "check" parent command, shared by every
// "check ..." subcommand.
const checkHelp = "Validate files without running the agent."

func registerCheckConfig(app *kingpin.Application, cli *cliEnv) {
	cmd := cli.command(app, "check", checkHelp).
		Command("config", "Validate agent config files; print every problem as file:line:col: path: message and exit 1 if any.")
	files := cmd.Arg("file", "Config file(s) to check.").Required().ExistingFiles()
	cmd.Action(cli.action(func(context.Context) error {
		return checkConfig(cli, *files)
	}))
}

// checkConfig checks each file alone (no SEISMO_* environment, no flags), so
// the answer does not depend on the shell it runs in.
func checkConfig(cli *cliEnv, files []string) error {
	failed := 0
	for _, f := range files {
		if _, err := config.Load(config.LoadOptions{File: f}); err != nil {
			failed++
			fmt.Fprintf(cli.stdout, "%s: FAILED\n%v\n", f, err)
			continue
		}
		fmt.Fprintf(cli.stdout, "%s: OK\n", f)
	}
	if failed > 0 {
		return &exitError{code: 1}
	}
	return nil
}
