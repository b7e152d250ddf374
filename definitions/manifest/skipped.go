package manifest

import (
	"fmt"
	"strings"
)

// Name names the document's object as messages do: Kind[.group]/name, with the kind's group
// unless it is the core group (ConfigMap/code, Route.serving.knative.dev/hello); an object
// that only gives generateName is named by the prefix and * (rayjob-sample-*).
func (d Document) Name() string {
	name := d.Object.GetName()
	if name == "" && d.Object.GetGenerateName() != "" {
		name = d.Object.GetGenerateName() + "*"
	}
	return d.Object.GroupVersionKind().GroupKind().String() + "/" + name
}

// SkippedLine is the one line that tells which documents of a manifest were left out because
// no workload definition describes their kind:
//
//	skipped 2 documents with no workload definition: ConfigMap/x (f.yaml:1), Service/y (f.yaml:20)
//
// "" when there are none.
func SkippedLine(docs []Document) string {
	if len(docs) == 0 {
		return ""
	}
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = fmt.Sprintf("%s (%s)", d.Name(), d.Where())
	}
	noun := "documents"
	if len(docs) == 1 {
		noun = "document"
	}
	return fmt.Sprintf("skipped %d %s with no workload definition: %s", len(docs), noun, strings.Join(parts, ", "))
}
