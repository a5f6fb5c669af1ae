package config

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// RedactedYAML renders the config in force as YAML under its file keys,
// in struct order, with every secret as <secret> (secrets marshal as text
// that way), for the console's status page. It never fails on a value it
// does not know: such a value is printed with %v.
func (c *Config) RedactedYAML() ([]byte, error) {
	n := yamlNode(reflect.ValueOf(*c))
	return yaml.Marshal(n)
}

var (
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	durationType  = reflect.TypeFor[time.Duration]()
)

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func yamlNode(v reflect.Value) *yaml.Node {
	if !v.IsValid() {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
	if v.Type() == durationType {
		return scalar(time.Duration(v.Int()).String())
	}
	if v.Type().Implements(textMarshaler) && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return scalar("<error: " + err.Error() + ">")
		}
		return scalar(string(b))
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return yamlNode(reflect.Value{})
		}
		return yamlNode(v.Elem())
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		addFields(m, v)
		return m
	case reflect.Map:
		m := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return strings.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		})
		for _, k := range keys {
			m.Content = append(m.Content, scalar(fmt.Sprint(k.Interface())), yamlNode(v.MapIndex(k)))
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return scalar("<bytes>")
		}
		s := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range v.Len() {
			s.Content = append(s.Content, yamlNode(v.Index(i)))
		}
		return s
	case reflect.String:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v.String()}
	}
	n := &yaml.Node{}
	if err := n.Encode(v.Interface()); err != nil {
		return scalar(fmt.Sprint(v.Interface()))
	}
	return n
}

// addFields appends v's exported fields to the mapping m under their
// koanf (else yaml) key; squashed or embedded structs are inlined.
func addFields(m *yaml.Node, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("koanf")
		if tag == "" {
			tag = f.Tag.Get("yaml")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if (f.Anonymous || strings.Contains(opts, "squash") || strings.Contains(opts, "inline")) && fv.Kind() == reflect.Struct {
			addFields(m, fv)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m.Content = append(m.Content, scalar(name), yamlNode(fv))
	}
}
