// Package testbin builds the seismo binary once per test process, for the
// tests that run the real command as a child (end-to-end tests, drills).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Version and Revision are stamped into the binary the way "make build"
// does, so tests can check that build information reaches /metrics.
const (
	Version  = "v0.0.0-e2e"
	Revision = "e2e"
)

var (
	mu    sync.Mutex
	dir   string
	built = sync.OnceValues(func() (string, error) {
		d, err := os.MkdirTemp("", "seismo-test-bin-")
		if err != nil {
			return "", err
		}
		mu.Lock()
		dir = d
		mu.Unlock()
		bin := filepath.Join(d, "seismo")
		cmd := exec.Command("go", "build",
			"-ldflags", "-X main.version="+Version+" -X main.revision="+Revision,
			"-o", bin, "github.com/seismo-agent/seismo/cmd/seismo")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build: %w\n%s", err, out)
		}
		return bin, nil
	})
)

// Seismo returns the path of the seismo binary, building it on first use.
// TEST_SEISMO_BIN names a prebuilt binary to use instead (make drills
// builds one).
func Seismo() (string, error) {
	if b := os.Getenv("TEST_SEISMO_BIN"); b != "" {
		return filepath.Abs(b)
	}
	return built()
}

// Remove deletes the built binary; call it from TestMain after m.Run.
func Remove() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}
