package karta

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	rawType      = reflect.TypeFor[json.RawMessage]()
	metadataType = reflect.TypeFor[Metadata]()
)

// unknownFields reports every field of the decoded document v that the input types t do not
// declare, so a field the converter does not know is never dropped silently.
func unknownFields(v any, t reflect.Type, f *field.Path, is *issues) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawType || t == metadataType {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		known := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			known[name] = t.Field(i).Type
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := known[k]
			if !ok {
				is.notConverted(child(f, k).String(), "unknown field: not converted")
				continue
			}
			unknownFields(m[k], ft, child(f, k), is)
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range l {
			unknownFields(e, t.Elem(), f.Index(i), is)
		}
	}
}

func child(f *field.Path, name string) *field.Path {
	if f == nil {
		return field.NewPath(name)
	}
	return f.Child(name)
}
