package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrUnknownKey is matched (errors.Is) by every error about a key the target type does
// not have.
var ErrUnknownKey = errors.New("unknown key")

// Decode decodes node into out (a non-nil pointer) after checking that every mapping key
// in node names a field of the type it decodes into. Unknown keys are reported together,
// each as "line N: unknown key "k" in <path> (known keys: ...)". path names node in
// messages, for example "fake" for a section; empty means the document's top level.
func Decode(node *yaml.Node, path string, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictyaml: Decode needs a non-nil pointer, got %T", out)
	}
	if errs := check(node, rv.Type().Elem(), path); len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := node.Decode(out); err != nil {
		return typeError(err, path)
	}
	return nil
}

// ErrUnknownTag is matched (errors.Is) by the error about a YAML tag that is not one of
// StandardTags.
var ErrUnknownTag = errors.New("unknown YAML tag")

// StandardTags are the YAML tags a document may carry explicitly ("!!str 0123"). Any
// other tag ("!Secret x", "!!python/name:x") is refused: yaml would drop it silently and
// decode what follows it, which is rarely what was meant, and a value that starts with
// "!" unquoted, such as a token, would lose its first word to it.
var StandardTags = []string{"!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp", "!!map", "!!seq", "!!merge"}

// Parse parses data into a document node. An empty document yields a nil node. A node
// with a tag outside StandardTags is an error (ErrUnknownTag), one per node, each with
// its line and column. No error quotes a value, a tag or an anchor of the document, so
// that a credential written in the wrong place cannot reach a log through it.
func Parse(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", withoutAnchorName(err))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	if errs := unknownTags(doc.Content[0], nil); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return doc.Content[0], nil
}

// unknownTags appends an error for every node under n (n included) whose explicit tag is
// not standard. Aliases are not followed: the nodes they name are checked where they are.
func unknownTags(n *yaml.Node, errs []error) []error {
	if n.Style&yaml.TaggedStyle != 0 && !slices.Contains(StandardTags, n.Tag) {
		errs = append(errs, fmt.Errorf("line %d column %d: %w: only the standard tags %s are allowed; quote a value that starts with \"!\"",
			n.Line, n.Column, ErrUnknownTag, strings.Join(StandardTags, ", ")))
	}
	for _, c := range n.Content {
		errs = unknownTags(c, errs)
	}
	return errs
}

// unknownAnchor is the one yaml parse error that quotes the document: an alias ("*x")
// before or without its anchor. An unquoted value that starts with "*" is one.
var unknownAnchor = regexp.MustCompile(`unknown anchor '.*' referenced`)

// withoutAnchorName returns err with the name of an unknown anchor left out.
func withoutAnchorName(err error) error {
	msg := err.Error()
	if !unknownAnchor.MatchString(msg) {
		return err
	}
	return errors.New(unknownAnchor.ReplaceAllLiteralString(msg,
		`an alias ("*name") names no anchor ("&name") before it; quote a value that starts with "*"`))
}

// typeError prefixes the path to yaml's own type errors, which already carry line numbers.
func typeError(err error, path string) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && path != "" {
		return fmt.Errorf("in %s: %w", path, err)
	}
	return err
}

// Keys returns the sorted YAML keys of struct type T, as Decode accepts them.
func Keys[T any]() []string {
	fields, _ := fieldsOf(reflect.TypeFor[T]())
	return sortedKeys(fields)
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func check(n *yaml.Node, t reflect.Type, path string) []error {
	if n == nil {
		return nil
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return check(n.Content[0], t, path)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // the type decodes itself
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // yaml reports the type mismatch with its line
		}
		fields, inlineMap := fieldsOf(t)
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if key.Value == "<<" {
				continue // merge key
			}
			ft, ok := fields[key.Value]
			switch {
			case ok:
				errs = append(errs, check(val, ft, join(path, key.Value))...)
			case inlineMap != nil:
				errs = append(errs, check(val, inlineMap.Elem(), join(path, key.Value))...)
			default:
				errs = append(errs, fmt.Errorf("line %d: %w %q in %s (known keys: %s)",
					key.Line, ErrUnknownKey, key.Value, where(path), strings.Join(sortedKeys(fields), ", ")))
			}
		}
		return errs
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, check(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))...)
		}
		return errs
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		var errs []error
		for i, item := range n.Content {
			errs = append(errs, check(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	case reflect.Float32, reflect.Float64:
		if n.Kind == yaml.ScalarNode && underflows(n.Value, t.Bits()) {
			return []error{fmt.Errorf("line %d: %s: %s is too small to tell from 0", n.Line, where(path), n.Value)}
		}
	}
	return nil
}

// underflows reports whether v is a number other than 0 that parses as 0 in a float of
// the given size, which yaml would silently decode as 0 (often "use the default").
func underflows(v string, bits int) bool {
	v = strings.ReplaceAll(v, "_", "")
	f, err := strconv.ParseFloat(v, bits)
	if err != nil || f != 0 {
		return false
	}
	mantissa, _, _ := strings.Cut(strings.ToLower(v), "e")
	return strings.ContainsAny(mantissa, "123456789")
}

// fieldsOf returns the YAML keys of struct t with their types, following yaml.v3's naming
// (the tag's name, else the lower-cased field name) and ",inline" embedding.
func fieldsOf(t reflect.Type) (map[string]reflect.Type, reflect.Type) {
	fields := map[string]reflect.Type{}
	var inlineMap reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Map {
				inlineMap = ft
				continue
			}
			inner, innerMap := fieldsOf(ft)
			for k, v := range inner {
				fields[k] = v
			}
			if innerMap != nil {
				inlineMap = innerMap
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields, inlineMap
}

func sortedKeys(m map[string]reflect.Type) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}
