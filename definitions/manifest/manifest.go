// Package manifest reads multi-document YAML (or JSON) manifests into unstructured objects,
// remembering the file and line each document starts at so errors can point at them.
package manifest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions/paths"
)

// Document is one object of a manifest.
type Document struct {
	Object *unstructured.Unstructured
	// Raw is the document's YAML.
	Raw []byte
	// Source and Line say where the document starts.
	Source string
	Line   int
}

// Where renders "file:line" for error messages.
func (d Document) Where() string { return fmt.Sprintf("%s:%d", d.Source, d.Line) }

// ReadFile reads every object in a manifest file.
func ReadFile(path string) ([]Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Read(data, path)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// Read splits a manifest into documents and decodes each. Empty documents are skipped; a
// document that is not a Kubernetes object (no apiVersion or kind) is an error naming its line.
// Lists (kind: List or *List with items) are flattened.
func Read(data []byte, source string) ([]Document, error) {
	var out []Document
	for _, chunk := range split(data) {
		if len(bytes.TrimSpace(stripComments(chunk.data))) == 0 {
			continue
		}
		// YAML → JSON → unstructured, as the API server decodes: whole numbers become int64.
		js, err := yaml.YAMLToJSON(chunk.data)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: malformed YAML: %s", source, errorLine(err, chunk.line), cleanYAMLError(err))
		}
		var doc any
		if err := utiljson.Unmarshal(js, &doc); err != nil {
			return nil, fmt.Errorf("%s:%d: malformed YAML: %s", source, chunk.line, err)
		}
		if doc == nil {
			continue
		}
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s:%d: document is not a Kubernetes object (a YAML mapping with apiVersion and kind)", source, chunk.line)
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("%s:%d: document is not a Kubernetes object: apiVersion and kind are required", source, chunk.line)
		}
		if items, ok := obj["items"].([]any); ok && strings.HasSuffix(u.GetKind(), "List") {
			for i, it := range items {
				m, ok := it.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s:%d: items[%d] is not an object", source, chunk.line, i)
				}
				out = append(out, Document{Object: &unstructured.Unstructured{Object: m}, Source: source, Line: chunk.line})
			}
			continue
		}
		out = append(out, Document{Object: u, Raw: chunk.data, Source: source, Line: chunk.line})
	}
	return out, nil
}

type chunk struct {
	data []byte
	line int // 1-based line of the document's first line
}

// split cuts a YAML stream at `---` lines.
func split(data []byte) []chunk {
	var out []chunk
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	cur := chunk{line: 1}
	var buf bytes.Buffer
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "---" || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "---\t") {
			cur.data = append([]byte(nil), buf.Bytes()...)
			out = append(out, cur)
			buf.Reset()
			cur = chunk{line: n + 1}
			continue
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
	}
	cur.data = append([]byte(nil), buf.Bytes()...)
	return append(out, cur)
}

func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out.Write(l)
		}
	}
	return out.Bytes()
}

func errorLine(err error, start int) int {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			return start + n - 1
		}
	}
	return start
}

func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	s = strings.TrimPrefix(s, "yaml: ")
	return strings.TrimSpace(yamlLineLabel.ReplaceAllString(s, ""))
}

var yamlLineLabel = regexp.MustCompile(`line \d+: ?`)

// LineOf returns the line of the field at path (as the engine renders paths:
// spec.replicatedJobs[0].replicas, limits["nvidia.com/gpu"]) in the document's file. Where the
// path goes further than the document, it is the line of the deepest part that exists; the
// document's first line when nothing of it does (or the document came from a List).
func (d Document) LineOf(path string) int {
	if len(d.Raw) == 0 || path == "" {
		return d.Line
	}
	p, err := paths.Parse(path)
	if err != nil {
		return d.Line
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(d.Raw, &root); err != nil || len(root.Content) == 0 {
		return d.Line
	}
	cur := root.Content[0]
	line := 0
	for _, step := range p.Steps() {
		for cur.Kind == yamlv3.AliasNode && cur.Alias != nil {
			cur = cur.Alias
		}
		var next *yamlv3.Node
		switch {
		case step.Kind == paths.Field && cur.Kind == yamlv3.MappingNode:
			for i := 0; i+1 < len(cur.Content); i += 2 {
				if cur.Content[i].Value == step.Name {
					line, next = cur.Content[i].Line, cur.Content[i+1]
					break
				}
			}
		case step.Kind == paths.Index && cur.Kind == yamlv3.SequenceNode && step.Index < len(cur.Content):
			next = cur.Content[step.Index]
			line = next.Line
		}
		if next == nil {
			break
		}
		cur = next
	}
	if line == 0 {
		return d.Line
	}
	return d.Line + line - 1
}
