package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// parseYAML parses a config document, records the position of every key
// path in o, and reports keys that the type t does not have, with their
// file:line:col. It returns the document as a map for koanf. Only a YAML
// syntax error is returned as error; key problems go to errs so that all of
// them are reported together.
func parseYAML(name string, data []byte, t reflect.Type, o origins, errs *problems) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if len(doc.Content) == 0 { // empty file
		return map[string]any{}, nil
	}
	root := doc.Content[0]
	if isNull(root) {
		return map[string]any{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config %s:%d:%d: want a mapping of keys at the top level, got %s", name, root.Line, root.Column, kindName(root))
	}
	w := keyWalker{file: name, origins: o, errs: errs}
	w.walk(root, t, "")

	var m map[string]any
	if err := root.Decode(&m); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return m, nil
}

// keyWalker walks a YAML node tree alongside a Go type.
type keyWalker struct {
	file    string
	origins origins
	errs    *problems
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func (w *keyWalker) at(n *yaml.Node) origin {
	return origin{name: w.file, line: n.Line, col: n.Column}
}

func (w *keyWalker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) || isNull(n) {
		return // a scalar to the decoder, whatever its Go kind
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.errs.add(w.at(n), path, "want a mapping, got "+kindName(n))
			return
		}
		fields := structKeys(t)
		for _, kv := range pairs(n) {
			k, v := kv[0], kv[1]
			p := joinKey(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				w.errs.add(w.at(k), p, "unknown key"+suggest(k.Value, fields))
				continue
			}
			w.origins[p] = w.at(v)
			w.walk(v, ft, p)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.errs.add(w.at(n), path, "want a mapping, got "+kindName(n))
			return
		}
		for _, kv := range pairs(n) {
			k, v := kv[0], kv[1]
			p := joinKey(path, k.Value)
			w.origins[p] = w.at(v)
			w.walk(v, t.Elem(), p)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return // the decoder reports the type mismatch
		}
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			w.origins[p] = w.at(e)
			w.walk(e, t.Elem(), p)
		}
	}
}

// pairs returns the key/value pairs of a mapping node with YAML merge keys
// ("<<: *defaults") expanded, the way the decoder sees them: merged pairs
// first, so explicit keys after them win in origins.
func pairs(n *yaml.Node) [][2]*yaml.Node {
	var merged, own [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag != "!!merge" {
			own = append(own, [2]*yaml.Node{k, v})
			continue
		}
		sources := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		}
		for _, src := range sources {
			if src.Kind == yaml.AliasNode && src.Alias != nil {
				src = src.Alias
			}
			if src.Kind == yaml.MappingNode {
				merged = append(merged, pairs(src)...)
			}
		}
	}
	return append(merged, own...)
}

// structKeys maps the koanf keys of t's fields to their types, descending
// into ",squash" embedded structs the way the decoder does.
func structKeys(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "squash") && f.Type.Kind() == reflect.Struct {
			for k, v := range structKeys(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // the decoder's own fallback
		}
		out[name] = f.Type
	}
	return out
}

// knownKey reports whether the dotted key path names a field of t (or an
// entry of a map in t). Paths through lists are not addressable this way.
func knownKey(t reflect.Type, key string) bool {
	for part := range strings.SplitSeq(key, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			ft, ok := structKeys(t)[part]
			if !ok {
				return false
			}
			t = ft
		case reflect.Map:
			t = t.Elem()
		default:
			return false
		}
	}
	return true
}

func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// suggest returns ` (did you mean "x"?)` for the known key closest to k, if
// one is close enough to be a typo.
func suggest(k string, known map[string]reflect.Type) string {
	best, bestD := "", 3
	for c := range known {
		if d := editDistance(k, c); d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
