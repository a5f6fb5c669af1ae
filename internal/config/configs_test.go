package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// configsDir holds the example configs shipped with seismo.
const configsDir = "../../configs"

// TestConfigsExamplesLoad loads every file in configs/ so that the examples
// never rot.
func TestConfigsExamplesLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(configsDir, "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(LoadOptions{File: f})
			require.NoError(t, err)
		})
	}
}

// TestExampleDocumentsEveryKey makes configs/seismo.yml the complete
// reference: every key of Config must appear in it.
func TestExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(configsDir, "seismo.yml"))
	require.NoError(t, err)
	o := origins{}
	var errs problems
	_, err = parseYAML("seismo.yml", data, reflect.TypeFor[Config](), o, &errs)
	require.NoError(t, err)
	require.Empty(t, errs)
	for _, key := range leafKeys(reflect.TypeFor[Config](), "") {
		_, ok := o[key]
		require.True(t, ok, "configs/seismo.yml does not describe %q; add it with a comment", key)
	}
}

// TestDefaultYAMLMatchesDefault keeps the embedded default file and Default()
// from drifting apart.
func TestDefaultYAMLMatchesDefault(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg, err := Load(LoadOptions{})
	require.NoError(t, err)
	def := Default()
	require.NoError(t, def.resolve(mustGetwd(t)))
	require.Equal(t, def, *cfg)
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

// leafKeys lists the key paths of t's scalar, list and map fields.
func leafKeys(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return []string{prefix}
	}
	var out []string
	for k, ft := range structKeys(t) {
		out = append(out, leafKeys(ft, joinKey(prefix, k))...)
	}
	return out
}
