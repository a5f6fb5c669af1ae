package demo

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/seismo-agent/seismo/internal/config"
)

var update = flag.Bool("update", false, "rewrite the ConfigMap in configs/kubernetes/sidecar.yaml from the standalone files")

const kubeDir = "../configs/kubernetes"

// configMapSources maps each key of the sidecar ConfigMap to the standalone
// file it embeds verbatim.
var configMapSources = map[string]string{"seismo.yml": "seismo-sidecar.yml"}

func sourceFile(key string) string {
	if f, ok := configMapSources[key]; ok {
		return f
	}
	return key
}

// kubeObject holds the parts of a manifest the test reads.
type kubeObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct{ Name string }
	Data     map[string]string `yaml:"data"`
	Spec     struct {
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    *int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name  string   `yaml:"name"`
		Args  []string `yaml:"args"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		LivenessProbe  *probe `yaml:"livenessProbe"`
		ReadinessProbe *probe `yaml:"readinessProbe"`
		VolumeMounts   []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []struct {
		Name      string                 `yaml:"name"`
		ConfigMap *struct{ Name string } `yaml:"configMap"`
		EmptyDir  *struct{}              `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

func readManifests(t *testing.T, file string) []kubeObject {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(false)
	var out []kubeObject
	for {
		var o kubeObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, o)
	}
}

// TestSidecarExample checks the Kubernetes sidecar example: its ConfigMap
// embeds the standalone config verbatim, that config loads, and the pod
// mounts, ports and probes agree with it.
func TestSidecarExample(t *testing.T) {
	manifest := filepath.Join(kubeDir, "sidecar.yaml")
	if *update {
		rewriteConfigMap(t, manifest)
	}
	objs := readManifests(t, manifest)
	byKind := map[string]kubeObject{}
	for _, o := range objs {
		byKind[o.Kind] = o
	}
	require.Contains(t, byKind, "ConfigMap")
	require.Contains(t, byKind, "Deployment")

	cm := byKind["ConfigMap"]
	require.Contains(t, cm.Data, "seismo.yml")
	for key, text := range cm.Data {
		want, err := os.ReadFile(filepath.Join(kubeDir, sourceFile(key)))
		require.NoError(t, err, "ConfigMap key %s has no standalone file", key)
		require.Equal(t, string(want), text, "ConfigMap key %s differs from %s; run go test ./demo -run TestSidecarExample -update", key, sourceFile(key))
	}

	cfg, err := config.Load(config.LoadOptions{File: filepath.Join(kubeDir, sourceFile("seismo.yml"))})
	require.NoError(t, err)
	// Rule files sit next to the config in the ConfigMap's mount.
	require.NotEmpty(t, cfg.Rules.Files)
	for _, f := range cfg.Rules.Files {
		require.Contains(t, cm.Data, filepath.Base(f), "rule file %s is not in the ConfigMap", f)
	}

	pod := byKind["Deployment"].Spec.Template.Spec
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.NotNil(t, pod.SecurityContext.RunAsUser)
	require.NotZero(t, *pod.SecurityContext.RunAsUser)

	volumes := map[string]string{} // name -> kind
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil:
			require.Equal(t, cm.Metadata.Name, v.ConfigMap.Name)
			volumes[v.Name] = "configMap"
		case v.EmptyDir != nil:
			volumes[v.Name] = "emptyDir"
		}
	}
	var names []string
	for _, c := range pod.Containers {
		names = append(names, c.Name)
		if c.Name == "app" {
			// seismo scrapes and probes the application where the kubelet
			// does.
			require.Len(t, c.Ports, 1)
			port := strconv.Itoa(c.Ports[0].ContainerPort)
			require.NotNil(t, c.ReadinessProbe)
			require.Len(t, cfg.Collectors.ScrapeConfigs, 1)
			require.Equal(t, []string{"localhost:" + port}, cfg.Collectors.ScrapeConfigs[0].StaticConfigs[0].Targets)
			require.Len(t, cfg.Collectors.ProbeConfigs, 1)
			require.Equal(t, []string{"http://localhost:" + port + c.ReadinessProbe.HTTPGet.Path}, cfg.Collectors.ProbeConfigs[0].Targets)
			continue
		}
		if c.Name != "seismo" {
			continue
		}
		require.Contains(t, c.Args, "run")
		mounts := map[string]string{} // path -> volume kind
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = volumes[m.Name]
		}
		var configFile string
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--config="); ok {
				configFile = v
			}
		}
		require.Equal(t, "seismo.yml", path.Base(configFile))
		require.Equal(t, "configMap", mounts[path.Dir(configFile)], "config comes from the ConfigMap")
		require.Equal(t, "emptyDir", mounts[cfg.DataDir], "data_dir %s is on the emptyDir", cfg.DataDir)

		_, port, err := net.SplitHostPort(cfg.HTTP.ListenAddress)
		require.NoError(t, err)
		require.Len(t, c.Ports, 1)
		require.Equal(t, port, strconv.Itoa(c.Ports[0].ContainerPort))
		require.NotNil(t, c.LivenessProbe)
		require.Equal(t, "/-/healthy", c.LivenessProbe.HTTPGet.Path)
		require.Equal(t, c.Ports[0].Name, c.LivenessProbe.HTTPGet.Port)
		require.NotNil(t, c.ReadinessProbe)
		require.Equal(t, "/-/ready", c.ReadinessProbe.HTTPGet.Path)
	}
	require.ElementsMatch(t, []string{"app", "seismo"}, names)
}

// rewriteConfigMap replaces each block scalar under the ConfigMap's data
// with its standalone file, keeping the rest of the manifest as written.
func rewriteConfigMap(t *testing.T, manifest string) {
	t.Helper()
	b, err := os.ReadFile(manifest)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		key, ok := strings.CutSuffix(strings.TrimSpace(lines[i]), ": |")
		if !ok || !strings.HasPrefix(lines[i], "  ") || strings.HasPrefix(lines[i], "   ") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(kubeDir, sourceFile(key)))
		require.NoError(t, err)
		for _, l := range strings.SplitAfter(string(src), "\n") {
			if strings.TrimSpace(l) == "" {
				out = append(out, strings.TrimLeft(l, " \t"))
			} else if l != "" {
				out = append(out, "    "+l)
			}
		}
		// Skip the old block: blank lines and lines indented deeper than the key.
		for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || strings.HasPrefix(lines[i+1], "    ")) {
			if strings.TrimSpace(lines[i+1]) == "" && (i+2 >= len(lines) || !strings.HasPrefix(lines[i+2], "    ")) {
				break
			}
			i++
		}
	}
	require.NoError(t, os.WriteFile(manifest, []byte(strings.Join(out, "")), 0o644))
}
