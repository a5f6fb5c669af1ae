package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxFuzzConfig bounds fuzzed config files: real ones are a few KiB, and
// the bound keeps every execution short.
const maxFuzzConfig = 64 << 10

// configErrLine is what every line of a Load error must look like: it names
// the file (with line:col when the problem has a position) or at least the
// key path of the problem.
var configErrLine = regexp.MustCompile(`^(config )?seismo\.yml(:\d+:\d+)?: |^[a-z_0-9.\[\]]+: `)

// FuzzLoad feeds arbitrary YAML to the config loader. Properties: Load
// never panics; it is deterministic; an accepted config validates; every
// line of an error names the file or the key path of the problem.
func FuzzLoad(f *testing.F) {
	for _, p := range []string{"../../configs/seismo.yml", "../../configs/notify.yml", "default.yml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzConfig {
			t.Skip("larger than any real config")
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "seismo.yml")
		require.NoError(t, os.WriteFile(file, data, 0o600))

		cfg, err := Load(LoadOptions{File: file})
		cfg2, err2 := Load(LoadOptions{File: file})
		require.Equal(t, err == nil, err2 == nil, "Load is not deterministic")
		if err != nil {
			require.Equal(t, err.Error(), err2.Error(), "Load is not deterministic")
			for _, line := range strings.Split(err.Error(), "\n") {
				line = strings.ReplaceAll(line, file, "seismo.yml")
				require.Regexp(t, configErrLine, line, "error line names neither file nor key")
			}
			return
		}
		require.Equal(t, cfg, cfg2, "Load is not deterministic")
		require.NoError(t, cfg.Validate(), "Load accepted a config that does not validate")
	})
}
