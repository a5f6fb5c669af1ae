package templates_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/notify/templates"
)

func TestSparkline(t *testing.T) {
	tests := []struct {
		in   []float64
		want string
	}{
		{nil, ""},
		{[]float64{1, 2, 2, 3, 7, 8, 7}, "▁▂▂▃▇█▇"},
		{[]float64{5, 5}, "▄▄"},
		{[]float64{0, math.NaN(), 1}, "▁ █"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, templates.Sparkline(tt.in))
		})
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{0.23, "s", "230 ms"}, {2.4, "s", "2.4 s"}, {0.62, "ratio", "62%"}, {0.005, "ratio", "0.5%"},
		{5200, "req/s", "5200 req/s"}, {12.34, "", "12.3"}, {1.1, "cores", "1.1 cores"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, templates.FormatValue(tt.v, tt.unit))
		})
	}
}

// A user file overrides a built-in template by name; a broken file fails at
// load, not at send time.
func TestLoadOverride(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mine.tmpl"), []byte(`{{ define "draft.title" }}custom {{ .Component }}{{ end }}`), 0o600))
	tm, err := templates.Load([]string{filepath.Join(dir, "*.tmpl")})
	require.NoError(t, err)
	out, err := tm.ExecuteTextString(`{{ template "draft.title" . }}`, map[string]string{"Component": "Login"})
	require.NoError(t, err)
	require.Equal(t, "custom Login", out)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.tmpl"), []byte(`{{ define "x" }}{{ .Foo `), 0o600))
	_, err = templates.Load([]string{filepath.Join(dir, "*.tmpl")})
	require.ErrorContains(t, err, "parse templates")
}
