package config

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// configsDir holds the example configs shipped with seismo.
const configsDir = "../../configs"

// TestConfigsExamplesLoad loads every agent config under configs/ (every
// *.yml, in subdirectories too) so that the examples never rot. Rule files
// (*.rules.yml or under a rules/ directory) belong to the rules package's
// tests; other YAML (*.yaml: Kubernetes manifests) must at least parse.
func TestConfigsExamplesLoad(t *testing.T) {
	var agentConfigs int
	err := filepath.WalkDir(configsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(configsDir, path)
		switch {
		case strings.HasSuffix(path, ".rules.yml"), slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), "rules"):
			return nil
		case strings.HasSuffix(path, ".yml"):
			agentConfigs++
			t.Run(rel, func(t *testing.T) {
				_, err := Load(LoadOptions{File: path})
				require.NoError(t, err)
			})
		case strings.HasSuffix(path, ".yaml"):
			t.Run(rel, func(t *testing.T) {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				dec := yaml.NewDecoder(bytes.NewReader(b))
				for {
					var doc any
					err := dec.Decode(&doc)
					if errors.Is(err, io.EOF) {
						break
					}
					require.NoError(t, err)
				}
			})
		}
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, agentConfigs)
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
