// Package file writes notifications as JSON lines to a file or to standard
// output, for audit and for running without any receiver. Each line is the
// webhook document (see notify/webhook) with a timestamp.
package file

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/webhook"
)

// Stdout is the path that selects standard output.
const Stdout = "-"

// Config is one file_configs entry.
type Config struct {
	// Path of the JSON-lines file, appended to; "-" is standard output.
	Path         string `koanf:"path"`
	SendResolved *bool  `koanf:"send_resolved"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{} }

// Resolve makes Path absolute relative to baseDir.
func (c *Config) Resolve(baseDir string) error {
	if c.Path != Stdout {
		c.Path = configutil.ResolvePath(baseDir, c.Path)
	}
	return nil
}

// Validate checks the entry.
func (c *Config) Validate() error {
	var errs configutil.Errors
	if c.Path == "" {
		errs.Addf("path", `required ("-" for standard output)`)
	}
	return errs.Err()
}

// Line is one line of output.
type Line struct {
	Time time.Time `json:"time"`
	// Kind is "notification" or "status_draft".
	Kind         string           `json:"kind"`
	Notification *webhook.Message `json:"notification,omitempty"`
	Draft        *draft.Draft     `json:"draft,omitempty"`
}

// SendsResolved reports whether notifications whose alerts all resolved are
// sent (the default).
func (c *Config) SendsResolved() bool { return c.SendResolved == nil || *c.SendResolved }

// Notifier appends lines.
type Notifier struct {
	cfg         Config
	externalURL string
	now         func() time.Time
	stdout      io.Writer

	mu sync.Mutex
}

var (
	_ notify.Notifier      = (*Notifier)(nil)
	_ notify.DraftNotifier = (*Notifier)(nil)
)

// New returns a notifier. stdout is where "-" writes (os.Stdout when nil).
func New(cfg Config, externalURL string, stdout io.Writer, now func() time.Time) *Notifier {
	if stdout == nil {
		stdout = os.Stdout
	}
	if now == nil {
		now = time.Now
	}
	return &Notifier{cfg: cfg, externalURL: externalURL, stdout: stdout, now: now}
}

// Notify writes one line.
func (n *Notifier) Notify(ctx context.Context, alerts ...*model.Alert) (bool, error) {
	return n.write(ctx, Line{Time: n.now(), Kind: "notification", Notification: webhook.NewMessage(ctx, n.externalURL, 0, alerts...)})
}

// NotifyDraft writes one draft line.
func (n *Notifier) NotifyDraft(ctx context.Context, d *draft.Draft) (bool, error) {
	return n.write(ctx, Line{Time: n.now(), Kind: "status_draft", Draft: d})
}

func (n *Notifier) write(ctx context.Context, l Line) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	b, err := json.Marshal(l)
	if err != nil {
		return false, fmt.Errorf("encode line: %w", err)
	}
	b = append(b, '\n')
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cfg.Path == Stdout {
		_, err := n.stdout.Write(b)
		return err != nil, err
	}
	f, err := os.OpenFile(n.cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return true, fmt.Errorf("open notification file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return true, fmt.Errorf("write notification file: %w", err)
	}
	if err := f.Close(); err != nil {
		return true, fmt.Errorf("close notification file: %w", err)
	}
	return false, nil
}
