package catalog

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/fixtures"
)

// The fuzzer mutates real workloads: every fixture of testdata/ (root object, child objects
// and pods, each fixture of a catalog kind) is a starting point, and the fuzz input is a
// script of edits to it. Starting from objects the definitions fully understand lets the
// fuzzer reach deep code (templates, resources, status rules, gangs, placement) instead of
// stopping at the first missing field.

// fuzzFixtures are the fixtures, sorted by path: the first input byte picks one.
var fuzzFixtures = sync.OnceValues(func() ([]*fixtures.Fixture, error) {
	return fixtures.LoadDir("testdata")
})

var (
	tokenRE  = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	quotedRE = regexp.MustCompile(`'([^'\\]{0,64})'`)
)

// fuzzVocabulary holds the identifiers and quoted strings of the catalog's definitions (field
// names, condition types, label keys): the keys and strings edits write, so that an edit can
// add a field a definition reads or set a condition it looks for.
var fuzzVocabulary = sync.OnceValue(func() []string {
	seen := map[string]bool{"": true, "x": true, "1": true, "-1": true, "0": true, "lots": true, "4Gi": true, "True": true, "False": true}
	names, _ := filepath.Glob("*.yaml") // the frameworks' definitions, in this folder
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for _, m := range tokenRE.FindAllString(string(data), -1) {
			seen[m] = true
		}
		for _, m := range quotedRE.FindAllStringSubmatch(string(data), -1) {
			seen[m[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
})

// Edits a script can make at a location.
const (
	editDelete byte = iota
	editNull
	editString
	editInt
	editFloat
	editBool
	editEmptyList
	editEmptyObject
	editWrapInList
	editRepeat
	editCopy
	editAddField
	numEdits
)

var (
	fuzzInts    = []int64{0, 1, 2, 3, -1, -2, 7, 256, 10_000, 1_000_000, 1_000_001, 1 << 31, 1<<63 - 1, -1 << 63}
	fuzzFloats  = []float64{0.5, 1.5, -0.5, 1e300, 2}
	fuzzRepeats = []int{2, 3, 17, 257, 1001}
)

// maxFuzzNodes bounds the values of the edited document: copies of copies would otherwise
// grow it exponentially and slow the fuzzer to a crawl.
const maxFuzzNodes = 20_000

// script reads fuzz bytes; past the end it reads zeros.
type script struct{ data []byte }

func (s *script) next() byte {
	if len(s.data) == 0 {
		return 0
	}
	b := s.data[0]
	s.data = s.data[1:]
	return b
}

// locate walks from doc to a location chosen by the script: a depth, then one child per
// level (map keys in sorted order). It returns the parent container of the location and the
// keys and indices leading to it (empty when the walk cannot take a single step).
func (s *script) locate(doc map[string]any) (parent any, path []any) {
	depth := 1 + int(s.next()%12)
	var cur any = doc
	for i := 0; i < depth; i++ {
		switch c := cur.(type) {
		case map[string]any:
			if len(c) == 0 {
				return parent, path
			}
			keys := slices.Sorted(maps.Keys(c))
			k := keys[int(s.next())%len(keys)]
			parent, path, cur = c, append(path, k), c[k]
		case []any:
			if len(c) == 0 {
				return parent, path
			}
			idx := int(s.next()) % len(c)
			parent, path, cur = c, append(path, idx), c[idx]
		default:
			return parent, path
		}
	}
	return parent, path
}

func valueAt(parent, key any) any {
	if m, ok := parent.(map[string]any); ok {
		return m[key.(string)]
	}
	return parent.([]any)[key.(int)]
}

func setValueAt(parent, key, v any) {
	if m, ok := parent.(map[string]any); ok {
		m[key.(string)] = v
		return
	}
	parent.([]any)[key.(int)] = v
}

func countNodes(v any) int {
	n := 1
	switch c := v.(type) {
	case map[string]any:
		for _, e := range c {
			n += countNodes(e)
		}
	case []any:
		for _, e := range c {
			n += countNodes(e)
		}
	}
	return n
}

// apply runs the script's edits on doc, which holds the fixture's root, children and pods.
// The root itself, its apiVersion and its kind are never replaced: they choose the definition.
func (s *script) apply(doc map[string]any) {
	vocab := fuzzVocabulary()
	for edits := 0; len(s.data) > 0 && edits < 16; edits++ {
		op := s.next() % numEdits
		parent, path := s.locate(doc)
		if len(path) == 0 || path[0] == "root" && (len(path) == 1 || len(path) == 2 && (path[1] == "apiVersion" || path[1] == "kind")) {
			continue
		}
		key := path[len(path)-1]
		old := valueAt(parent, key)
		switch op {
		case editDelete:
			if m, ok := parent.(map[string]any); ok {
				delete(m, key.(string))
			} else {
				setValueAt(parent, key, nil) // a list keeps its length: the index may be bound elsewhere
			}
		case editNull:
			setValueAt(parent, key, nil)
		case editString:
			setValueAt(parent, key, vocab[int(s.next())%len(vocab)])
		case editInt:
			setValueAt(parent, key, fuzzInts[int(s.next())%len(fuzzInts)])
		case editFloat:
			setValueAt(parent, key, fuzzFloats[int(s.next())%len(fuzzFloats)])
		case editBool:
			setValueAt(parent, key, s.next()%2 == 0)
		case editEmptyList:
			setValueAt(parent, key, []any{})
		case editEmptyObject:
			setValueAt(parent, key, map[string]any{})
		case editWrapInList:
			setValueAt(parent, key, []any{old})
		case editRepeat:
			n := fuzzRepeats[int(s.next())%len(fuzzRepeats)]
			item := old
			if l, ok := old.([]any); ok && len(l) > 0 {
				item = l[0]
			}
			if n*countNodes(item)+countNodes(doc) > maxFuzzNodes {
				continue
			}
			l := make([]any, n)
			for i := range l {
				l[i] = runtime.DeepCopyJSONValue(item)
			}
			setValueAt(parent, key, l)
		case editCopy:
			from, fromPath := s.locate(doc)
			if len(fromPath) == 0 {
				continue
			}
			v := valueAt(from, fromPath[len(fromPath)-1])
			if countNodes(v)+countNodes(doc) > maxFuzzNodes {
				continue
			}
			setValueAt(parent, key, runtime.DeepCopyJSONValue(v))
		case editAddField:
			m, ok := old.(map[string]any)
			if !ok {
				continue
			}
			m[vocab[int(s.next())%len(vocab)]] = fuzzInts[int(s.next())%len(fuzzInts)]
		}
	}
}

// fuzzDoc is the editable document of a fixture: its root, children and pods, deep-copied.
func fuzzDoc(f *fixtures.Fixture) map[string]any {
	children := make([]any, len(f.Children))
	for i, c := range f.Children {
		children[i] = c
	}
	pods := make([]any, len(f.Pods))
	for i, p := range f.Pods {
		pods[i] = p
	}
	return runtime.DeepCopyJSON(map[string]any{"root": f.Root, "children": children, "pods": pods})
}

// liveFromDoc sorts the edited children into the definition's child kinds and keeps the pods
// that are still objects, as the live resolver would hand them over.
func liveFromDoc(def *definitions.Definition, doc map[string]any) *definitions.LiveData {
	live := &definitions.LiveData{Children: map[string][]map[string]any{}, Pods: []map[string]any{}}
	byKind := map[string]string{}
	for _, c := range def.Children() {
		byKind[c.GroupVersionKind.Kind] = c.Name
	}
	children, _ := doc["children"].([]any)
	for _, c := range children {
		if m, ok := c.(map[string]any); ok {
			if name, ok := byKind[(&unstructured.Unstructured{Object: m}).GetKind()]; ok {
				live.Children[name] = append(live.Children[name], m)
			}
		}
	}
	pods, _ := doc["pods"].([]any)
	for _, p := range pods {
		if m, ok := p.(map[string]any); ok {
			live.Pods = append(live.Pods, m)
		}
	}
	return live
}

var knownStates = map[v1alpha1.State]bool{
	v1alpha1.StatePending: true, v1alpha1.StateInitializing: true, v1alpha1.StateRunning: true, v1alpha1.StateDegraded: true,
	v1alpha1.StateSuspended: true, v1alpha1.StateCompleted: true, v1alpha1.StateFailed: true, v1alpha1.StateUnknown: true,
}

// checkWorkload asserts what every caller of the engine relies on, whatever the object: a
// state of the vocabulary, a reason when it is Unknown (also among the warnings when the
// object cannot be read), totals that add up, no gang of one.
func checkWorkload(t *testing.T, mode string, w *definitions.Workload) {
	t.Helper()
	if !knownStates[w.Status.State] {
		t.Fatalf("%s: state %q is not in the vocabulary (reason %q)", mode, w.Status.State, w.Status.Reason)
	}
	if w.Status.State == v1alpha1.StateUnknown && strings.TrimSpace(w.Status.Reason) == "" {
		t.Fatalf("%s: state Unknown without a reason (warnings %v)", mode, w.Warnings)
	}
	// The grouper reports warnings when it cannot place a pod: a workload that cannot be read
	// must say so there too.
	if msg, ok := strings.CutPrefix(w.Status.Reason, "cannot read the workload: "); ok && !slices.Contains(w.Warnings, msg) {
		t.Fatalf("%s: reason %q is not among the warnings %q", mode, msg, w.Warnings)
	}
	var pods int64
	for _, r := range w.Roles {
		if r.Pods < 0 || r.Replicas < 0 && r.Pods != 0 {
			t.Fatalf("%s: role %s has %d pods from %d replicas", mode, r.Name, r.Pods, r.Replicas)
		}
		pods += r.Pods
	}
	if pods != w.Totals.Pods || pods > 1_000_000 {
		t.Fatalf("%s: roles add up to %d pods, totals say %d (at most 1,000,000 allowed)", mode, pods, w.Totals.Pods)
	}
	for _, g := range w.Groups {
		if g.MinMember < 2 {
			t.Fatalf("%s: group %s has minMember %d: a gang of one pod must not be emitted", mode, g.Name, g.MinMember)
		}
	}
}

// FuzzExpandCatalog edits real workloads of every catalog kind (setting, deleting and
// retyping fields, repeating list items, copying subtrees, in the root object, its children and
// its pods) and expands them with their catalog definition, offline and live, then places
// every pod and writes a pod-template field. Nothing may panic; every expansion must return a
// workload that checkWorkload accepts.
func FuzzExpandCatalog(f *testing.F) {
	all, err := fuzzFixtures()
	if err != nil {
		f.Fatal(err)
	}
	defs, err := compiledCatalog()
	if err != nil {
		f.Fatal(err)
	}
	reg := definitions.NewRegistry()
	reg.Add(defs...)
	for _, seed := range fuzzSeeds(f, all) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fuzzer reports panics, not slowness: an input that made the engine crawl would
		// only show as a stalled exec count. Far above the slowest input seen (0.2 s).
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("one input took %v: an expansion must stay bounded in time", d)
			}
		}()
		s := &script{data: data}
		fx := all[int(s.next())%len(all)]
		doc := fuzzDoc(fx)
		s.apply(doc)
		root, ok := doc["root"].(map[string]any)
		if !ok {
			return
		}
		obj := &unstructured.Unstructured{Object: root}
		def, ok := reg.Lookup(obj.GroupVersionKind().GroupKind())
		if !ok {
			t.Fatalf("%s: no catalog definition for %s", fx.Source, obj.GroupVersionKind())
		}
		w, err := def.Expand(obj)
		if err != nil {
			t.Fatalf("Expand of a %s failed: %v", obj.GetKind(), err)
		}
		checkWorkload(t, "offline", w)
		live := liveFromDoc(def, doc)
		w, err = def.ExpandLive(obj, live)
		if err != nil {
			t.Fatalf("ExpandLive of a %s failed: %v", obj.GetKind(), err)
		}
		checkWorkload(t, "live", w)
		for _, p := range live.Pods {
			pl, _, _ := w.Place(p)
			if pl.Group != nil && !slices.ContainsFunc(w.Groups, func(g definitions.Group) bool { return g.Name == pl.Group.Name }) {
				t.Fatalf("pod placed in group %s, which the workload does not have", pl.Group.Name)
			}
		}
		_, _ = def.PodLabelSelector(obj)
		for _, c := range def.Children() {
			_, _ = c.LabelSelector(obj)
		}
		_, _ = def.SetPodTemplateField(obj, `metadata.labels["workmap.dev/fuzz"]`, "x")
		_, _ = def.SetPodTemplateField(obj, "spec.schedulerName", "workmap")
	})
}

// seedEdit is one edit of a seed: a location given by its keys and indices in the fixture's
// document (root, children or pods first), the edit, its parameter byte for edits that read
// one, and for editCopy the location to copy from.
type seedEdit struct {
	path  []any
	edit  byte
	param byte
	from  []any
}

// fuzzSeeds writes scripts for shapes worth starting from: every fixture as is, and edits of a
// few that give fields of the wrong type, nulls, huge and negative numbers and long lists.
func fuzzSeeds(f *testing.F, all []*fixtures.Fixture) [][]byte {
	index := map[string]int{}
	for i, fx := range all {
		index[strings.TrimSuffix(strings.TrimPrefix(fx.Source, "testdata/"), ".yaml")] = i
	}
	seeds := make([][]byte, 0, len(all)+16)
	for i := range all {
		seeds = append(seeds, []byte{byte(i)})
	}
	// encode writes the bytes locate reads to reach path in doc.
	encode := func(fixture string, doc map[string]any, path []any) []byte {
		out := []byte{byte(len(path) - 1)}
		var cur any = doc
		for _, k := range path {
			switch c := cur.(type) {
			case map[string]any:
				keys := slices.Sorted(maps.Keys(c))
				pos := slices.Index(keys, k.(string))
				if pos < 0 {
					f.Fatalf("seed %s: no key %v among %v", fixture, k, keys)
				}
				out = append(out, byte(pos))
				cur = c[k.(string)]
			case []any:
				out = append(out, byte(k.(int)))
				cur = c[k.(int)]
			default:
				f.Fatalf("seed %s: cannot step into %T at %v", fixture, cur, k)
			}
		}
		return out
	}
	script := func(fixture string, edits ...seedEdit) {
		i, ok := index[fixture]
		if !ok || i > 255 {
			f.Fatalf("seed: fixture %s not found among the first 256", fixture)
		}
		out := []byte{byte(i)}
		doc := fuzzDoc(all[i])
		for _, e := range edits {
			out = append(out, e.edit)
			out = append(out, encode(fixture, doc, e.path)...)
			switch e.edit {
			case editString, editInt, editFloat, editBool, editRepeat:
				out = append(out, e.param)
			case editAddField:
				out = append(out, e.param, e.param)
			case editCopy:
				out = append(out, encode(fixture, doc, e.from)...)
			}
		}
		seeds = append(seeds, out)
	}
	rj := func(i int, rest ...any) []any { return append([]any{"root", "spec", "replicatedJobs", i}, rest...) }
	script("jobset/offline", seedEdit{path: rj(1, "replicas"), edit: editString})
	script("jobset/offline", seedEdit{path: rj(0, "template"), edit: editNull})
	script("jobset/offline", seedEdit{path: rj(1, "template", "spec", "parallelism"), edit: editInt, param: 4}) // -1
	script("jobset/offline", seedEdit{path: []any{"root", "spec", "replicatedJobs"}, edit: editRepeat, param: 4})
	script("jobset/running", seedEdit{path: []any{"pods", 0, "metadata", "labels"}, edit: editWrapInList}, seedEdit{path: []any{"children", 0, "status"}, edit: editEmptyList})
	script("jobset/malformed", seedEdit{path: []any{"root", "status"}, edit: editRepeat, param: 3})
	script("leaderworkerset/offline", seedEdit{path: []any{"root", "spec", "replicas"}, edit: editInt, param: 12})                      // 1<<63-1
	script("leaderworkerset/offline", seedEdit{path: []any{"root", "spec", "leaderWorkerTemplate", "size"}, edit: editFloat, param: 1}) // 1.5
	script("pytorchjob/offline", seedEdit{path: []any{"root", "spec", "pytorchReplicaSpecs"}, edit: editEmptyList})
	script("raycluster/offline", seedEdit{path: []any{"root", "spec", "workerGroupSpecs", 0}, edit: editCopy, from: []any{"root", "spec", "headGroupSpec"}})
	script("podcliqueset/offline", seedEdit{path: []any{"root", "spec", "template", "podCliqueScalingGroups", 0, "replicas"}, edit: editInt, param: 9}) // 1,000,000
	script("milvus/offline", seedEdit{path: []any{"root", "spec", "components"}, edit: editWrapInList})
	script("dynamographdeployment/offline", seedEdit{path: []any{"root", "spec"}, edit: editAddField})
	script("inferenceservice/offline", seedEdit{path: []any{"root", "spec", "predictor"}, edit: editString})
	script("knative-service/offline", seedEdit{path: []any{"root", "spec", "template", "metadata", "annotations"}, edit: editEmptyList})
	script("nimservice/offline", seedEdit{path: []any{"root", "spec", "scale"}, edit: editNull})
	return seeds
}
