package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/definitions/paths"
)

// setInFiles rewrites every workload of a known kind in the files and writes the files to
// stdout (or, with --diff, their diffs); other documents are kept byte for byte, and a
// rewritten YAML document keeps its comments and field order.
func (o *options) setInFiles(f *setFlags, edits []podTemplateEdit) error {
	reg, err := o.registry()
	if err != nil {
		return err
	}
	found := map[string]bool{}
	workloads := 0
	var outputs []string
	for _, file := range f.files {
		data, err := readInput(file)
		if err != nil {
			return err
		}
		// Reading the whole file first reports malformed documents with their line.
		if _, err := manifest.Read(data, file); err != nil {
			return err
		}
		var out, diffs strings.Builder
		for _, ch := range splitDocuments(data) {
			text, n, err := o.rewriteDocument(reg, ch, file, edits, found)
			if err != nil {
				return err
			}
			workloads += n
			out.WriteString(ch.separator)
			out.WriteString(text)
			if f.diff && text != ch.text {
				d, err := unifiedDiff(fmt.Sprintf("%s:%d", file, ch.line), fmt.Sprintf("%s:%d (set)", file, ch.line), ch.text, text)
				if err != nil {
					return err
				}
				diffs.WriteString(d)
			}
		}
		if f.diff {
			outputs = append(outputs, diffs.String())
		} else {
			outputs = append(outputs, out.String())
		}
	}
	if workloads == 0 {
		kinds := make([]string, 0, len(found))
		for k := range found {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		return fmt.Errorf("no workload of a known kind in %s (found: %s); see `workmap catalog list`, or pass --definitions", strings.Join(f.files, ", "), orNone(kinds))
	}
	for i, s := range outputs {
		if i > 0 && !f.diff {
			if !strings.HasSuffix(outputs[i-1], "\n") {
				fmt.Fprintln(o.out)
			}
			fmt.Fprintln(o.out, "---")
		}
		fmt.Fprint(o.out, s)
	}
	return nil
}

func readInput(file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(file)
}

// document is one document of a YAML stream as written: the separator line before it
// (empty for the first), its text and the line it starts at.
type document struct {
	separator, text string
	line            int
}

// splitDocuments cuts a YAML stream at `---` lines, as manifest.Read does, keeping every byte.
func splitDocuments(data []byte) []document {
	var out []document
	cur := document{line: 1}
	var buf strings.Builder
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "---" || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "---\t") {
			cur.text = buf.String()
			out = append(out, cur)
			buf.Reset()
			cur = document{separator: line + "\n", line: n + 1}
			continue
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
	}
	cur.text = buf.String()
	if len(data) > 0 && data[len(data)-1] != '\n' {
		cur.text = strings.TrimSuffix(cur.text, "\n")
	}
	return append(out, cur)
}

// rewriteDocument applies the edits to the workloads of one document (the object, or each
// item of a List) and returns its new text and how many workloads it holds. Kinds without a
// definition are recorded in unknown and left as they are.
func (o *options) rewriteDocument(reg *definitions.Registry, doc document, file string, edits []podTemplateEdit, unknown map[string]bool) (string, int, error) {
	js, err := yaml.YAMLToJSON([]byte(doc.text))
	if err != nil {
		return "", 0, fmt.Errorf("%s:%d: malformed YAML: %v", file, doc.line, err)
	}
	var parsed any
	if err := utiljson.Unmarshal(js, &parsed); err != nil {
		return "", 0, fmt.Errorf("%s:%d: %v", file, doc.line, err)
	}
	root, ok := parsed.(map[string]any)
	if !ok {
		return doc.text, 0, nil
	}
	before := runtime.DeepCopyJSON(root)
	objects := []map[string]any{root}
	if items, ok := root["items"].([]any); ok && strings.HasSuffix((&unstructured.Unstructured{Object: root}).GetKind(), "List") {
		objects = objects[:0]
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				objects = append(objects, m)
			}
		}
	}
	workloads := 0
	for _, m := range objects {
		obj := &unstructured.Unstructured{Object: m}
		gk := obj.GroupVersionKind().GroupKind()
		def, ok := reg.Lookup(gk)
		if !ok {
			unknown[gk.String()] = true
			continue
		}
		workloads++
		templates, err := applyEdits(def, obj, edits)
		if err != nil {
			return "", 0, fmt.Errorf("%s:%d: %w", file, doc.line, err)
		}
		// applyEdits replaces obj.Object: put the edited object back where it was read.
		if reflect.DeepEqual(m, obj.Object) {
			fmt.Fprintln(o.errOut, summary(objectRef(obj), templates, edits, false, ""))
			continue
		}
		for k := range m {
			delete(m, k)
		}
		for k, v := range obj.Object {
			m[k] = v
		}
		fmt.Fprintln(o.errOut, summary(objectRef(obj), templates, edits, true, ""))
	}
	if reflect.DeepEqual(before, root) {
		return doc.text, workloads, nil
	}
	if t := strings.TrimSpace(doc.text); strings.HasPrefix(t, "{") {
		b, err := json.MarshalIndent(root, "", "  ")
		if err != nil {
			return "", 0, err
		}
		return string(b) + "\n", workloads, nil
	}
	text, err := editYAML(doc.text, before, root)
	if err != nil {
		return "", 0, fmt.Errorf("%s:%d: %w", file, doc.line, err)
	}
	return text, workloads, nil
}

// change is one value written at a concrete location (field names and list indices).
type change struct {
	at    []any
	value any
}

// changes lists where after differs from before; the edits only add and replace values.
func changes(before, after any, at []any, out *[]change) {
	here := func() []any { return append([]any(nil), at...) }
	switch a := after.(type) {
	case map[string]any:
		b, ok := before.(map[string]any)
		if !ok {
			*out = append(*out, change{here(), after})
			return
		}
		for _, k := range sortedKeys(a) {
			bv, ok := b[k]
			if !ok {
				*out = append(*out, change{append(here(), k), a[k]})
				continue
			}
			changes(bv, a[k], append(here(), k), out)
		}
	case []any:
		b, ok := before.([]any)
		if !ok || len(b) != len(a) {
			*out = append(*out, change{here(), after})
			return
		}
		for i := range a {
			changes(b[i], a[i], append(here(), i), out)
		}
	default:
		if !reflect.DeepEqual(before, after) {
			*out = append(*out, change{here(), after})
		}
	}
}

// editYAML writes the changes between before and after into the YAML text, so that the
// document keeps its comments, field order and style.
func editYAML(text string, before, after map[string]any) (string, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(text), &doc); err != nil {
		return "", err
	}
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 {
		return "", fmt.Errorf("expected one YAML document")
	}
	var list []change
	changes(before, after, nil, &list)
	for _, c := range list {
		if err := setNode(doc.Content[0], c); err != nil {
			return "", err
		}
	}
	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(&doc); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func setNode(n *yamlv3.Node, c change) error {
	for n.Kind == yamlv3.AliasNode {
		n = n.Alias
	}
	for i, step := range c.at {
		last := i == len(c.at)-1
		switch s := step.(type) {
		case string:
			if n.Kind == yamlv3.ScalarNode && n.Tag == "!!null" {
				*n = yamlv3.Node{Kind: yamlv3.MappingNode, Tag: "!!map", LineComment: n.LineComment}
			}
			if n.Kind != yamlv3.MappingNode {
				return fmt.Errorf("%s is not an object in the YAML", renderAt(c.at[:i]))
			}
			var val *yamlv3.Node
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == s {
					val = n.Content[j+1]
				}
			}
			if val == nil {
				key, err := encodeNode(s)
				if err != nil {
					return err
				}
				val = &yamlv3.Node{Kind: yamlv3.MappingNode, Tag: "!!map"}
				n.Content = insertEntry(n.Content, key, val)
			}
			n = val
		case int:
			if n.Kind != yamlv3.SequenceNode || s >= len(n.Content) {
				return fmt.Errorf("%s is not a list of %d items in the YAML", renderAt(c.at[:i]), s+1)
			}
			n = n.Content[s]
		}
		for n.Kind == yamlv3.AliasNode {
			n = n.Alias
		}
		if last {
			v, err := encodeNode(c.value)
			if err != nil {
				return err
			}
			v.HeadComment, v.LineComment, v.FootComment = n.HeadComment, n.LineComment, n.FootComment
			*n = *v
		}
	}
	return nil
}

// insertEntry adds a key to a mapping's content: a new metadata goes before spec, as
// Kubernetes objects are written; any other key goes last.
func insertEntry(content []*yamlv3.Node, key, val *yamlv3.Node) []*yamlv3.Node {
	if key.Value == "metadata" {
		for j := 0; j+1 < len(content); j += 2 {
			if content[j].Value == "spec" {
				return append(content[:j:j], append([]*yamlv3.Node{key, val}, content[j:]...)...)
			}
		}
	}
	return append(content, key, val)
}

func encodeNode(v any) (*yamlv3.Node, error) {
	var n yamlv3.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return &n, nil
}

func renderPath(at []string) string {
	steps := make([]any, len(at))
	for i, s := range at {
		steps[i] = s
	}
	return renderAt(steps)
}

func renderAt(at []any) string {
	steps := make([]paths.Step, len(at))
	for i, s := range at {
		switch s := s.(type) {
		case string:
			steps[i] = paths.Step{Kind: paths.Field, Name: s}
		case int:
			steps[i] = paths.Step{Kind: paths.Index, Index: s}
		}
	}
	if len(steps) == 0 {
		return "the document"
	}
	return paths.FromSteps(steps).String()
}
