// Command seismo is the metrics anomaly detector and alerting agent: one
// binary that collects metrics, evaluates rules and detectors over them, and
// notifies people.
//
// Each subcommand lives in its own file and registers itself through one
// function listed in commands below (see docs/architecture.md, "Adding a
// subcommand").
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"
)

// commands registers every subcommand, in the order --help lists them. To add
// one, write cmd/seismo/<name>.go with a func register<Name>(app, cli) and add
// it here.
var commands = []func(app *kingpin.Application, cli *cliEnv){
	registerRun,
	registerCheckConfig,
	registerCheckRules,
	registerTestRules,
	registerReplay,
	registerDemo,
	registerBench,
	registerVersion,
}

// cliEnv is what every subcommand gets from main: where to write, a logger
// for messages before a config is loaded, and the process context (cancelled
// on SIGINT/SIGTERM for every command except run, which handles its own
// signals).
type cliEnv struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	logger *slog.Logger
	// environ is the process environment (os.Environ()); commands pass it on
	// to config.Load instead of letting library code read it.
	environ []string

	// started is set once a command's action begins; errors before that are
	// command-line mistakes (exit status 2).
	started bool
}

// action adapts a command's body to kingpin. Use it for every command:
//
//	cmd.Action(cli.action(func(ctx context.Context) error { ... }))
func (cli *cliEnv) action(run func(ctx context.Context) error) kingpin.Action {
	return func(*kingpin.ParseContext) error {
		cli.started = true
		return run(cli.ctx)
	}
}

// command returns the top-level command name, creating it with help when it
// does not exist yet, so that several files can add subcommands under one
// parent such as "check" or "test".
func (cli *cliEnv) command(app *kingpin.Application, name, help string) *kingpin.CmdClause {
	if c := app.GetCommand(name); c != nil {
		return c
	}
	return app.Command(name, help)
}

// exitError carries a specific exit status. A nil err means the problem was
// already reported to the user (e.g. by "check config") and only the status
// is left to set.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitUsage is the status used when the command line itself is wrong.
const exitUsage = 2

// terminated is thrown (panicked) by kingpin's terminate hook after --help or
// a usage error and recovered in runCLI, so that tests can run the CLI in
// process and main keeps the only os.Exit.
type terminated int

func main() {
	ctx, stop := signalContext(context.Background())
	defer stop()
	code := runCLI(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}

// runCLI parses args, runs the selected command and returns the process
// exit status.
func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) (code int) {
	cli := &cliEnv{
		ctx:     ctx,
		stdout:  stdout,
		stderr:  stderr,
		logger:  slog.New(slog.NewTextHandler(stderr, nil)),
		environ: environ,
	}
	app := newApp(cli)
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(terminated)
			if !ok {
				panic(r)
			}
			code = int(t)
		}
	}()
	if len(args) == 0 {
		app.Usage(nil)
		fmt.Fprintln(stderr, "seismo: command not specified (try --help)")
		return exitUsage
	}
	_, err := app.Parse(args)
	if err != nil && !cli.started {
		fmt.Fprintf(stderr, "seismo: %v (try --help)\n", err)
		return exitUsage
	}
	return exitStatus(err, stderr)
}

// newApp builds the kingpin application with every registered command.
func newApp(cli *cliEnv) *kingpin.Application {
	app := kingpin.New("seismo", "Metrics anomaly detector and alerting agent.")
	app.UsageWriter(cli.stdout).ErrorWriter(cli.stderr)
	app.Terminate(func(code int) { panic(terminated(code)) })
	app.HelpFlag.Short('h')
	for _, register := range commands {
		register(app, cli)
	}
	return app
}

// exitStatus maps the error a command returned to an exit status, printing it
// unless it was already reported.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "seismo:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "seismo:", err)
	return 1
}
