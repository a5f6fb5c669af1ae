package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/stretchr/testify/require"
)

// cli runs the command line in process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runCLI(context.Background(), args, &out, &errOut, nil)
	return code, out.String(), errOut.String()
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yml")
	require.NoError(t, os.WriteFile(good, []byte("log:\n  level: debug\n"), 0o600))
	bad := filepath.Join(dir, "bad.yml")
	require.NoError(t, os.WriteFile(bad, []byte("log:\n  levl: debug\n  format: xml\n"), 0o600))

	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string
		stderr     []string
		emptyStout bool
	}{
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"usage: seismo", "run [<flags>]", "check config", "version"}},
		{name: "help run", args: []string{"run", "--help"}, code: 0, stdout: []string{"usage: seismo run", "--config=FILE", "--http.listen-address"}},
		{name: "help check", args: []string{"check", "--help"}, code: 0, stdout: []string{"usage: seismo check", "config <file>..."}},
		{name: "help check config", args: []string{"help", "check", "config"}, code: 0, stdout: []string{"usage: seismo check config <file>..."}},
		{name: "version", args: []string{"version"}, code: 0, stdout: []string{"seismo, version ", "revision: ", "go: go1."}},
		{name: "no command", args: nil, code: 2, stderr: []string{"command not specified"}},
		{name: "unknown command", args: []string{"bogus"}, code: 2, stderr: []string{`expected command but got "bogus"`, "(try --help)"}},
		{name: "unknown flag", args: []string{"run", "--bogus"}, code: 2, stderr: []string{"unknown long flag '--bogus'"}},
		{name: "check good config", args: []string{"check", "config", good}, code: 0, stdout: []string{good + ": OK"}},
		{
			name: "check bad config names every problem",
			args: []string{"check", "config", good, bad},
			code: 1,
			stdout: []string{
				good + ": OK",
				bad + ": FAILED",
				bad + `:2:3: log.levl: unknown key (did you mean "level"?)`,
				bad + `:3:11: log.format: want text or json, got "xml"`,
			},
		},
		{name: "check missing file", args: []string{"check", "config", filepath.Join(dir, "nope.yml")}, code: 2, stderr: []string{"nope.yml"}},
		{name: "run with a bad config", args: []string{"run", "--config", bad}, code: 1, stderr: []string{"load config", "log.levl: unknown key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, tt.args...)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, w := range tt.stdout {
				require.Contains(t, stdout, w)
			}
			for _, w := range tt.stderr {
				require.Contains(t, stderr, w)
			}
		})
	}
}

// TestHelpOnEveryCommand runs "<command> --help" for every command and
// subcommand registered, including those added later.
func TestHelpOnEveryCommand(t *testing.T) {
	app := newApp(&cliEnv{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard, logger: slog.New(slog.DiscardHandler)})
	var walk func(cmds []*kingpin.CmdModel)
	seen := 0
	walk = func(cmds []*kingpin.CmdModel) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			seen++
			t.Run(c.FullCommand, func(t *testing.T) {
				args := append(strings.Fields(c.FullCommand), "--help")
				code, stdout, stderr := cli(t, args...)
				require.Equal(t, 0, code, "stderr: %s", stderr)
				require.Contains(t, stdout, "usage: seismo "+c.FullCommand)
				require.NotEmpty(t, strings.TrimSpace(c.Help), "every command needs a help text")
			})
			walk(c.Commands)
		}
	}
	walk(app.Model().Commands)
	require.GreaterOrEqual(t, seen, 5, "run, check, check config, version and help at least")
}
