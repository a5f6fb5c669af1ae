// Package templates loads notification and draft templates through
// Alertmanager's template package: Alertmanager's built-in defaults, then
// seismo's embedded defaults, then the user's files, so that a user file
// overrides any default by defining a template of the same name. Templates are
// parsed when the config loads, never first at send time.
package templates

import (
	"embed"
	"fmt"
	htmltmpl "html/template"
	"math"
	"strconv"
	"strings"
	texttmpl "text/template"

	"github.com/prometheus/alertmanager/template"
)

//go:embed *.tmpl
var defaults embed.FS

// Load returns the templates with the defaults and the files matching the
// given globs (in order; later definitions win). A glob matching nothing is
// not an error, as in Alertmanager.
func Load(globs []string) (*template.Template, error) {
	t, err := template.FromGlobs(nil, func(text *texttmpl.Template, html *htmltmpl.Template) {
		text.Funcs(texttmpl.FuncMap(Funcs))
		html.Funcs(htmltmpl.FuncMap(Funcs))
	})
	if err != nil {
		return nil, fmt.Errorf("load built-in templates: %w", err)
	}
	entries, err := defaults.ReadDir(".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		f, err := defaults.Open(e.Name())
		if err != nil {
			return nil, err
		}
		err = t.Parse(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("parse built-in template %s: %w", e.Name(), err)
		}
	}
	for _, g := range globs {
		if err := t.FromGlob(g); err != nil {
			return nil, fmt.Errorf("parse templates %q: %w", g, err)
		}
	}
	return t, nil
}

// Funcs are the functions seismo adds to Alertmanager's template functions.
var Funcs = map[string]any{
	"sparkline":   Sparkline,
	"formatValue": FormatValue,
	"percent":     func(v float64) string { return strconv.FormatFloat(v*100, 'f', 0, 64) + "%" },
	"round":       func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) },
}

var bars = []rune("▁▂▃▄▅▆▇█")

// Sparkline renders values as a row of block characters scaled between their
// minimum and maximum ("▁▂▂▃▇█▇"). NaN and infinite values show as a space.
func Sparkline(vs []float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	var b strings.Builder
	for _, v := range vs {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			b.WriteRune(' ')
		case hi == lo:
			b.WriteRune(bars[len(bars)/2-1])
		default:
			i := int((v - lo) / (hi - lo) * float64(len(bars)-1))
			b.WriteRune(bars[min(max(i, 0), len(bars)-1)])
		}
	}
	return b.String()
}

// FormatValue prints v with its unit: "1.52 s", "230 ms", "12.5%", "480 req/s".
func FormatValue(v float64, unit string) string {
	switch unit {
	case "s":
		if math.Abs(v) < 1 && v != 0 {
			return trim(v*1000) + " ms"
		}
		return trim(v) + " s"
	case "ratio":
		return trim(v*100) + "%"
	case "":
		return trim(v)
	}
	return trim(v) + " " + unit
}

func trim(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
