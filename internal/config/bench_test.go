package config

import (
	"path/filepath"
	"testing"
)

// BenchmarkLoad measures loading the fully commented example config with
// environment and flag layers, as every start and reload does.
func BenchmarkLoad(b *testing.B) {
	opts := LoadOptions{
		File:  filepath.Join(configsDir, "seismo.yml"),
		Env:   []string{"SEISMO_LOG__LEVEL=debug", "HOME=/root"},
		Flags: map[string]any{"http.listen_address": "127.0.0.1:0"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(opts); err != nil {
			b.Fatal(err)
		}
	}
}
