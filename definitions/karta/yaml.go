package karta

import (
	"bytes"
	"encoding/json"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// MarshalYAML renders a definition as block-style YAML with its fields in the API's order
// (workload, roles, children, pods, status, gang), as definitions are written by hand.
func MarshalYAML(def *v1alpha1.WorkloadDefinition) ([]byte, error) {
	js, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node // JSON is YAML: decoding it keeps the field order
	if err := yaml.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	blockStyle(&doc)
	if top := doc.Content[0]; len(top.Content) >= 4 && top.Content[0].Value == "kind" && top.Content[2].Value == "apiVersion" {
		top.Content[0], top.Content[1], top.Content[2], top.Content[3] = top.Content[2], top.Content[3], top.Content[0], top.Content[1]
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// blockStyle drops the flow and quoting styles JSON input has: the encoder quotes scalars
// only where YAML needs it. A string that needs quoting and holds single quotes (CEL string
// literals) is double-quoted, which reads better than YAML's doubled single quotes.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && strings.Contains(n.Value, "'") {
		if out, err := yaml.Marshal(n.Value); err == nil && len(out) > 0 && out[0] == '\'' {
			n.Style = yaml.DoubleQuotedStyle
		}
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}
