package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/seismo-agent/seismo/rules"
)

func registerCheckRules(app *kingpin.Application, cli *cliEnv) {
	cmd := cli.command(app, "check", checkHelp).
		Command("rules", "Validate rule files; print every problem as file:line:col: group \"g\", rule N \"Name\": message and exit 1 if any.")
	files := cmd.Arg("file", "Rule file(s) to check.").Required().Strings()
	cmd.Action(cli.action(func(context.Context) error {
		return checkRules(cli, *files)
	}))
}

// checkRules parses each file on its own so that one broken file does not
// hide the result of the others.
func checkRules(cli *cliEnv, files []string) error {
	failed := 0
	for _, f := range files {
		fmt.Fprintf(cli.stdout, "Checking %s\n", f)
		groups, err := rules.ParseFiles(rules.ParseOptions{}, f)
		if err != nil {
			failed++
			var es rules.Errors
			if errors.As(err, &es) {
				fmt.Fprintf(cli.stdout, "  FAILED: %d problem(s):\n", len(es))
			} else {
				fmt.Fprintln(cli.stdout, "  FAILED:")
			}
			fmt.Fprintln(cli.stdout, err)
			continue
		}
		n := 0
		for _, g := range groups {
			n += len(g.Rules)
		}
		fmt.Fprintf(cli.stdout, "  SUCCESS: %d rules found\n", n)
	}
	if failed > 0 {
		return &exitError{code: 1}
	}
	return nil
}

func registerTestRules(app *kingpin.Application, cli *cliEnv) {
	cmd := cli.command(app, "test", "Run unit tests.").
		Command("rules", "Run rule unit tests (promtool's test-file format; anomaly rules too); exit 1 if any fails.")
	files := cmd.Arg("test-file", "Unit-test file(s).").Required().Strings()
	cmd.Action(cli.action(func(ctx context.Context) error {
		ok, err := rules.RunUnitTests(ctx, cli.stdout, rules.UnitTestOptions{}, *files...)
		if err != nil {
			return err
		}
		if !ok {
			return &exitError{code: 1}
		}
		return nil
	}))
}
