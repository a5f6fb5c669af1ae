package configutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("hunter2")
	for name, got := range map[string]string{
		"String":   s.String(),
		"%v":       fmt.Sprintf("%v", s),
		"%s":       fmt.Sprintf("%s", s),
		"%#v":      fmt.Sprintf("%#v", s),
		"%+v":      fmt.Sprintf("%+v", struct{ S Secret }{s}),
		"JSON":     mustJSON(t, struct{ S Secret }{s}),
		"JSONMapV": mustJSON(t, map[string]Secret{"k": s}),
	} {
		t.Run(name, func(t *testing.T) {
			require.NotContains(t, got, "hunter2")
			require.Contains(t, got, "<secret>")
		})
	}
	require.Equal(t, "hunter2", string(s), "the value itself stays usable")
	require.Equal(t, `{"S":""}`, mustJSON(t, struct{ S Secret }{""}), "an empty secret marshals empty")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return strings.TrimSpace(b.String())
}

func TestResolveSecret(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("  from-file\n"), 0o600))

	tests := []struct {
		name    string
		value   Secret
		file    string
		want    Secret
		wantErr string
	}{
		{name: "value only", value: "v", want: "v"},
		{name: "relative file, trimmed", file: "token", want: "from-file"},
		{name: "absolute file", file: filepath.Join(dir, "token"), want: "from-file"},
		{name: "both set", value: "v", file: "token", wantErr: "both the value and its _file twin are set"},
		{name: "missing file", file: "nope", wantErr: "read secret file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveSecret(tc.value, tc.file, dir)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, err.Error(), "from-file")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestResolvePath(t *testing.T) {
	require.Equal(t, "/etc/seismo/rules.yml", ResolvePath("/etc/seismo", "rules.yml"))
	require.Equal(t, "/abs/r.yml", ResolvePath("/etc/seismo", "/abs/r.yml"))
	require.Equal(t, "", ResolvePath("/etc/seismo", ""))
	require.Equal(t, "r.yml", ResolvePath("", "r.yml"))
}

func TestErrorsCollectEveryProblemWithPaths(t *testing.T) {
	var sub Errors
	sub.Addf("url", "must be absolute, got %q", "x")
	sub.Addf("[1].timeout", "must be positive")

	var top Errors
	require.NoError(t, top.Err(), "nothing recorded is no error")
	top.Addf("http.listen_address", "missing port")
	top.Merge("notify.receivers[0]", sub.Err())
	top.Merge("storage", errors.New("plain error"))
	top.Merge("ignored", nil)

	err := top.Err()
	require.Error(t, err)
	require.Equal(t,
		"http.listen_address: missing port\n"+
			"notify.receivers[0].url: must be absolute, got \"x\"\n"+
			"notify.receivers[0][1].timeout: must be positive\n"+
			"storage: plain error",
		err.Error())

	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "http.listen_address", fe.Path)
}

func TestJoin(t *testing.T) {
	for _, tc := range []struct{ prefix, path, want string }{
		{"", "a", "a"},
		{"a", "", "a"},
		{"a", "b", "a.b"},
		{"a", "[0].b", "a[0].b"},
	} {
		require.Equal(t, tc.want, Join(tc.prefix, tc.path), "%q + %q", tc.prefix, tc.path)
	}
}
