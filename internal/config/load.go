package config

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"
	"gopkg.in/yaml.v3"

	"github.com/seismo-agent/seismo/internal/configutil"
)

// DefaultYAML is the config used by "seismo run" without --config. It is
// documented in the README and must stay valid (a test loads it).
//
//go:embed default.yml
var DefaultYAML []byte

// EnvPrefix starts every environment variable that sets a config key.
//
// Mapping: strip the prefix, lower-case the rest, and read a double
// underscore as a level of nesting; single underscores stay, because keys are
// snake_case. So SEISMO_HTTP__LISTEN_ADDRESS sets http.listen_address and
// SEISMO_DATA_DIR sets data_dir. Values are read as YAML ("10" is a number,
// "true" a boolean, "15s" a duration, "[a, b]" a list). Any SEISMO_*
// variable that names no key is an error.
const EnvPrefix = "SEISMO_"

// EnvName returns the environment variable that sets the key path, e.g.
// EnvName("http.listen_address") is "SEISMO_HTTP__LISTEN_ADDRESS".
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// LoadOptions says where Load reads from. Each layer overrides the one
// before: Go defaults < File (or the embedded default) < Env < Flags.
type LoadOptions struct {
	// File is the YAML config file; empty means the embedded DefaultYAML,
	// with relative paths resolved against the working directory.
	File string
	// Env is the process environment as from os.Environ(); only SEISMO_*
	// entries are read. Nil reads none.
	Env []string
	// Flags maps key paths ("http.listen_address") to values given on the
	// command line; only flags the user actually set belong here.
	Flags map[string]any
}

// Load builds a Config from the layers in opts, decodes it strictly,
// resolves relative paths and validates it. The error lists every problem,
// one per line, each naming where it comes from ("seismo.yml:3:5:",
// "$SEISMO_LOG__LEVEL:", "flag:") and the key path.
func Load(opts LoadOptions) (*Config, error) {
	name, data := "<embedded default>", DefaultYAML
	baseDir := ""
	if opts.File != "" {
		b, err := os.ReadFile(opts.File)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		name, data = opts.File, b
		abs, err := filepath.Abs(opts.File)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", opts.File, err)
		}
		baseDir = filepath.Dir(abs)
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("working directory for relative paths: %w", err)
		}
		baseDir = wd
	}

	cfg := Default()
	origins := origins{}
	var errs problems

	// Layer 1: the YAML file, parsed with yaml.v3 so that every key keeps
	// its line and column for error messages.
	k := koanf.New(".")
	fileMap, err := parseYAML(name, data, reflect.TypeFor[Config](), origins, &errs)
	if err != nil {
		return nil, err
	}
	if err := k.Load(confmap.Provider(fileMap, ""), nil); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}

	// Layer 2: SEISMO_* environment variables.
	envMap := loadEnv(opts.Env, origins, &errs)
	if err := k.Load(confmap.Provider(envMap, "."), nil); err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}

	// Layer 3: command-line flags.
	for key := range opts.Flags {
		origins[key] = origin{name: "flag"}
		if !knownKey(reflect.TypeFor[Config](), key) {
			errs.add(origin{name: "flag"}, key, "unknown key")
		}
	}
	if err := k.Load(confmap.Provider(opts.Flags, "."), nil); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}

	if err := decode(k.Raw(), &cfg); err != nil {
		errs.addDecodeErrors(err, origins)
	}

	// Validate even after decode errors, so that one run reports every
	// problem; a field that failed to decode keeps its default and is
	// not reported twice.
	cfg.File = opts.File
	cfg.FileEmpty = opts.File != "" && configutil.Blank(data)
	var ferrs configutil.Errors
	ferrs.Merge("", cfg.resolve(baseDir))
	ferrs.Merge("", cfg.Validate())
	errs.addFieldErrors(ferrs.Err(), origins)
	if len(errs) > 0 {
		return nil, errs.err()
	}
	return &cfg, nil
}

// decode unmarshals the merged layers into out, which holds the defaults,
// strictly: unknown keys are errors and a duration must carry its unit.
//
// What a key that is set does to its default:
//   - a scalar replaces it;
//   - a mapping merges key by key into a struct (unset keys keep defaults);
//   - a list or a map (e.g. labels) replaces the default list or map whole;
//   - an empty value (`key:` or `key: null`) counts as not set.
func decode(data map[string]any, out any) error {
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			durationHook,
			mapstructure.TextUnmarshallerHookFunc(),
		),
		ErrorUnused: true,
		ZeroFields:  true, // lists and maps replace, not merge with, defaults
		TagName:     "koanf",
		Result:      out,
	})
	if err != nil {
		return err
	}
	return d.Decode(pruneNulls(data))
}

// pruneNulls removes nil values from nested maps, so that an empty key in
// YAML leaves the default alone instead of zeroing it.
func pruneNulls(m map[string]any) map[string]any {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			m[k] = pruneNulls(x)
		}
	}
	return m
}

// durationHook parses "15s" into a time.Duration and rejects bare numbers,
// which would otherwise silently mean nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[time.Duration]() {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("want a duration such as 15s or 1m30s, got %q", v)
		}
		return d, nil
	case time.Duration:
		return v, nil
	}
	return nil, fmt.Errorf("want a duration with a unit such as 15s, got %v", data)
}

// loadEnv turns SEISMO_* variables into a flat map of key paths.
func loadEnv(environ []string, origins origins, errs *problems) map[string]any {
	out := map[string]any{}
	p := env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			key := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "__", "."))
			where := origin{name: "$" + name}
			if !knownKey(reflect.TypeFor[Config](), key) {
				errs.add(where, key, "unknown key (environment variables map SEISMO_A__B_C to a.b_c)")
				return "", nil
			}
			var v any
			if err := yaml.Unmarshal([]byte(value), &v); err != nil || v == nil {
				v = value // not a YAML scalar: keep it as a string
			}
			origins[key] = where
			out[key] = v
			return "", nil // collected in out with dotted keys; the provider's own map is unused
		},
	})
	_, _ = p.Read() // Read only fails without an environ function
	return out
}

// sectionHook is what Load and Validate call on one top-level section.
type sectionHook struct {
	key      string
	validate func() error
	resolve  func(baseDir string) error
}

// sections returns the hooks of every struct-typed field of the struct that
// cfg points to whose pointer has a Validate() error or
// Resolve(baseDir string) error method. This is how a new section of Config
// gets validated without further wiring.
func sections(cfg any) []sectionHook {
	var out []sectionHook
	v := reflect.ValueOf(cfg).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if key == "" || key == "-" || f.Type.Kind() != reflect.Struct {
			continue
		}
		p := v.Field(i).Addr().Interface()
		h := sectionHook{key: key}
		if x, ok := p.(interface{ Validate() error }); ok {
			h.validate = x.Validate
		}
		if x, ok := p.(interface{ Resolve(baseDir string) error }); ok {
			h.resolve = x.Resolve
		}
		out = append(out, h)
	}
	return out
}

// resolve makes relative paths absolute against baseDir (the config file's
// directory) in the top-level fields and every section.
func (c *Config) resolve(baseDir string) error {
	var errs configutil.Errors
	c.DataDir = configutil.ResolvePath(baseDir, c.DataDir)
	for _, s := range sections(c) {
		if s.resolve != nil {
			errs.Merge(s.key, s.resolve(baseDir))
		}
	}
	return errs.Err()
}

// origin is where a value came from: a file position, an environment
// variable or a flag.
type origin struct {
	name      string // file name, "$SEISMO_X" or "flag"
	line, col int    // file positions only
}

func (o origin) String() string {
	if o.line > 0 {
		return fmt.Sprintf("%s:%d:%d", o.name, o.line, o.col)
	}
	return o.name
}

// origins records, for each key path, where its final value came from.
type origins map[string]origin

// lookup returns the origin of path or of its closest ancestor.
func (o origins) lookup(path string) origin {
	for p := path; p != ""; p = parentPath(p) {
		if w, ok := o[p]; ok {
			return w
		}
	}
	return origin{}
}

func parentPath(p string) string {
	i := max(strings.LastIndexByte(p, '.'), strings.LastIndexByte(p, '['))
	if i < 0 {
		return ""
	}
	return p[:i]
}

// problem is one config error with its origin and key path.
type problem struct {
	where     origin
	path, msg string
}

func (p problem) String() string {
	var b strings.Builder
	if w := p.where.String(); w != "" {
		b.WriteString(w + ": ")
	}
	if p.path != "" {
		b.WriteString(p.path + ": ")
	}
	b.WriteString(p.msg)
	return b.String()
}

// problems collects every error found while loading.
type problems []problem

func (ps *problems) add(where origin, path, msg string) {
	*ps = append(*ps, problem{where: where, path: path, msg: msg})
}

// addFieldErrors adds the FieldErrors in err, each with its origin, except
// those about a path that already has a problem.
func (ps *problems) addFieldErrors(err error, o origins) {
	seen := map[string]bool{}
	for _, p := range *ps {
		seen[p.path] = true
	}
	for _, e := range leafErrors(err) {
		var fe *configutil.FieldError
		if errors.As(e, &fe) {
			if seen[fe.Path] {
				continue
			}
			ps.add(o.lookup(fe.Path), fe.Path, fe.Msg)
		} else {
			ps.add(origin{}, "", e.Error())
		}
	}
}

// addDecodeErrors adds mapstructure's errors, which name the field path.
// Unknown keys were already reported with their positions by parseYAML and
// loadEnv, so mapstructure's own "has invalid keys" errors are dropped then.
func (ps *problems) addDecodeErrors(err error, o origins) {
	reported := len(*ps) > 0
	for _, e := range decodeErrors(err) {
		var de *mapstructure.DecodeError
		if errors.As(e, &de) {
			msg := de.Unwrap().Error()
			if strings.HasPrefix(msg, "has invalid keys") && reported {
				continue
			}
			path := strings.TrimPrefix(de.Name(), ".")
			ps.add(o.lookup(path), path, msg)
			continue
		}
		ps.add(origin{}, "", e.Error())
	}
}

// err joins the problems, one per line, ordered by where they are.
func (ps problems) err() error {
	slices.SortStableFunc(ps, func(a, b problem) int {
		return cmp.Or(
			strings.Compare(a.where.name, b.where.name),
			cmp.Compare(a.where.line, b.where.line),
			cmp.Compare(a.where.col, b.where.col),
		)
	})
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = errors.New(p.String())
	}
	return errors.Join(errs...)
}

// decodeErrors digs mapstructure's DecodeErrors out of the wrapped, joined
// error its Decode returns.
func decodeErrors(err error) []error {
	var de *mapstructure.DecodeError
	if errors.As(err, &de) && err == error(de) {
		return []error{err}
	}
	switch x := err.(type) {
	case interface{ Unwrap() []error }:
		var out []error
		for _, e := range x.Unwrap() {
			out = append(out, decodeErrors(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		if inner := x.Unwrap(); inner != nil {
			return decodeErrors(inner)
		}
	}
	return []error{err}
}

// leafErrors flattens errors.Join trees.
func leafErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}
