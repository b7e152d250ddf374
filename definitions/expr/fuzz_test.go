package expr_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/expr"
)

// fuzzExpr is one expression of the fuzz corpus with the result type its field wants.
type fuzzExpr struct {
	field string
	src   string
	want  expr.Result
}

// extraExprs reach the CEL libraries the catalog does not use yet, with arguments read from
// the object, so that a definition author's use of them is covered too.
var extraExprs = []fuzzExpr{
	{"extra.quantity", "quantity(string(self.spec.gpus)).asInteger() > 0", expr.Bool},
	{"extra.isQuantity", "isQuantity(string(self.spec.gpus)) ? quantity(string(self.spec.gpus)).compareTo(quantity('1')) : 0", expr.Int},
	{"extra.regex", "self.metadata.name.matches('^[a-z]+-[0-9]+$') ? 1 : self.metadata.name.find('[0-9]+').size()", expr.Int},
	{"extra.strings", "self.metadata.name.split('-').map(s, s.upperAscii()).join('/') + string(self.spec.replicas)", expr.String},
	{"extra.substring", "self.metadata.name.substring(int(self.spec.replicas), size(self.metadata.name))", expr.String},
	{"extra.format", "'%s/%d/%s'.format([self.metadata.name, self.spec.replicas, self.spec])", expr.String},
	{"extra.url", "url(string(self.spec.endpoint)).getHost()", expr.String},
	{"extra.ip", "ip(string(self.spec.address)).family() == 4 && cidr('10.0.0.0/8').containsIP(string(self.spec.address))", expr.Bool},
	{"extra.semver", "isSemver(string(self.spec.version)) && semver(string(self.spec.version)).major() >= 1", expr.Bool},
	{"extra.lists", "self.spec.items.map(i, i.?replicas.orValue(0)).sum() + [1, 2].indexOf(int(self.spec.replicas))", expr.Int},
	{"extra.sort", "self.spec.items.map(i, int(i.replicas)).sort()[0]", expr.Int},
	{"extra.sets", "sets.contains(self.spec.items.map(i, i.name), ['a', 'b'])", expr.Bool},
	{"extra.twoVar", "self.spec.transformMap(k, v, k.size() > 1, v) == {}", expr.Bool},
	{"extra.bind", "cel.bind(n, self.spec.replicas * self.spec.items.size(), n > 10 ? n : -n)", expr.Int},
	{"extra.labels", "self.metadata.labels.filter(k, k.startsWith('a')).map(k, self.metadata.labels[k]).size()", expr.Int},
	{"extra.pods", "pods.filter(p, p.?status.?phase.orValue('') == 'Running').size() + size(children.jobs)", expr.Int},
	{"extra.stringMap", "self.metadata.labels", expr.StringMap},
	{"extra.list", "self.spec.items.map(i, {'name': i.name, 'minMember': i.replicas})", expr.List},
}

// catalogExprs compiles every expression of the catalog once, one group per definition plus
// one for extraExprs, in an environment where self, item and pod are dynamic: the fuzzer
// then evaluates them against objects of any shape.
var catalogExprs = sync.OnceValues(func() ([][]compiledExpr, error) {
	raw, err := catalog.Raw()
	if err != nil {
		return nil, err
	}
	groups := make([][]fuzzExpr, 0, len(raw)+1)
	for _, d := range raw {
		groups = append(groups, definitionExprs(d))
	}
	groups = append(groups, extraExprs)
	env, err := expr.NewEnv(expr.Types{})
	if err != nil {
		return nil, err
	}
	out := make([][]compiledExpr, len(groups))
	for i, g := range groups {
		for _, e := range g {
			p, ferr := env.Compile(field.NewPath(e.field), e.src, e.want)
			if ferr != nil {
				return nil, ferr
			}
			out[i] = append(out[i], compiledExpr{p, e.want})
		}
	}
	return out, nil
})

type compiledExpr struct {
	*expr.Program
	want expr.Result
}

func definitionExprs(d *v1alpha1.WorkloadDefinition) []fuzzExpr {
	var out []fuzzExpr
	add := func(p *field.Path, src string, want expr.Result) {
		if src == "" {
			return
		}
		out = append(out, fuzzExpr{d.Name + " " + p.String(), src, want})
	}
	spec := field.NewPath("spec")
	for i, r := range d.Spec.Roles {
		p := spec.Child("roles").Index(i)
		add(p.Child("when"), r.When, expr.Bool)
		add(p.Child("instanceName"), r.InstanceName, expr.String)
		add(p.Child("replicas"), r.Replicas, expr.Int)
		add(p.Child("minReplicas"), r.MinReplicas, expr.Int)
		add(p.Child("podsPerReplica"), r.PodsPerReplica, expr.Int)
		add(p.Child("resources"), r.Resources, expr.StringMap)
		add(p.Child("podInstance"), r.PodInstance, expr.String)
		add(p.Child("podReplica"), r.PodReplica, expr.IntOrString)
	}
	for i, c := range d.Spec.Children {
		add(spec.Child("children").Index(i).Child("selector"), c.Selector, expr.StringMap)
	}
	if d.Spec.Pods != nil {
		add(spec.Child("pods", "selector"), d.Spec.Pods.Selector, expr.StringMap)
	}
	for i, s := range d.Spec.Status {
		p := spec.Child("status").Index(i)
		add(p.Child("when"), s.When, expr.Bool)
		add(p.Child("reason"), s.Reason, expr.String)
	}
	if d.Spec.Gang != nil {
		for i, g := range d.Spec.Gang.Groups {
			p := spec.Child("gang", "groups").Index(i)
			add(p.Child("when"), g.When, expr.Bool)
			add(p.Child("minMember"), g.MinMember, expr.Int)
			add(p.Child("computed"), g.Computed, expr.List)
			add(p.Child("podGroup"), g.PodGroup, expr.String)
		}
	}
	return out
}

var (
	identRE  = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	stringRE = regexp.MustCompile(`'([^'\\]*)'`)
)

// vocabulary is every identifier and string literal of the compiled expressions, plus a few
// numeric strings: the generator builds objects from them, so generated objects have the
// fields and values the expressions look for (spec, replicas, 'Failed', label keys, ...).
var vocabulary = sync.OnceValue(func() []string {
	groups, err := catalogExprs()
	if err != nil {
		return nil
	}
	seen := map[string]bool{"": true, "0": true, "1": true, "-1": true, "2": true, "x": true, "1.5": true, "4Gi": true, "100m": true}
	for _, p := range slices.Concat(groups...) {
		for _, m := range identRE.FindAllString(p.Source, -1) {
			seen[m] = true
		}
		for _, m := range stringRE.FindAllStringSubmatch(p.Source, -1) {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
})

// generator builds an unstructured value (maps, lists, strings, int64, float64, bools, nulls)
// from fuzz bytes, with keys and strings from the vocabulary.
type generator struct {
	data   []byte
	vocab  []string
	budget int // values left to generate: keeps objects small and the fuzzer fast
}

func (g *generator) next() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return b
}

var fuzzInts = []int64{0, 1, 2, 3, -1, 4, 8, 255, 256, 10_000, 1_000_000_000, 1 << 31, -1 << 63, 1<<63 - 1}

func (g *generator) value(depth int) any {
	if g.budget <= 0 || depth > 6 {
		return g.vocab[int(g.next())%len(g.vocab)]
	}
	g.budget--
	switch g.next() % 12 {
	case 0:
		return nil
	case 1:
		return g.next()%2 == 0
	case 2:
		return fuzzInts[int(g.next())%len(fuzzInts)]
	case 3:
		return float64(int8(g.next())) / 4
	case 4, 5:
		return g.vocab[int(g.next())%len(g.vocab)]
	case 6, 7, 8, 9:
		m := map[string]any{}
		for n := g.next() % 6; n > 0; n-- {
			m[g.vocab[int(g.next())%len(g.vocab)]] = g.value(depth + 1)
		}
		return m
	default:
		n := int(g.next() % 6)
		l := make([]any, 0, n)
		for ; n > 0; n-- {
			l = append(l, g.value(depth+1))
		}
		return l
	}
}

// childNames are the keys of `children` the catalog's definitions use (jobs, podCliques, ...).
var childNames = sync.OnceValue(func() []string {
	defs, err := catalog.Definitions()
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range defs {
		for _, c := range d.Children() {
			out = append(out, c.Name)
		}
	}
	return out
})

// maxRepeat bounds the lists "repeat" makes: well beyond expr.MaxCollection, so that
// cost-tracked expressions run past what the estimate assumes, yet quick to evaluate.
const maxRepeat = 1000

// lengthen repeats the items of every non-empty list in v until it has n items. Long lists
// then come from short inputs, which the fuzzer mutates and minimizes quickly (minimizing a
// 50 KB input costs minutes). Items are lengthened before they are repeated, so each is
// visited once.
func lengthen(v any, n int) any {
	switch c := v.(type) {
	case map[string]any:
		for k, e := range c {
			c[k] = lengthen(e, n)
		}
	case []any:
		for i, e := range c {
			c[i] = lengthen(e, n)
		}
		for orig := len(c); orig > 0 && len(c) < n; {
			c = append(c, c[len(c)%orig])
		}
		return c
	}
	return v
}

// envelope turns fuzz input into the variables of one evaluation. Input that starts with '{'
// and is valid JSON is used as is; anything else feeds the generator. Either way the result
// is an envelope whose key repeat lengthens its lists, and whose keys self, item, key, pods,
// children, pod and replica bind the variables of the same name (self defaults to the whole
// envelope, pods and every child list to empty lists, so that live expressions run too).
func envelope(data []byte) *expr.Activation {
	var doc map[string]any
	if len(data) > 0 && data[0] == '{' {
		if err := utiljson.Unmarshal(data, &doc); err != nil {
			doc = nil
		}
	}
	if doc == nil {
		g := &generator{data: data, vocab: vocabulary(), budget: 64}
		doc = map[string]any{}
		for n := 1 + g.next()%8; n > 0; n-- {
			doc[g.vocab[int(g.next())%len(g.vocab)]] = g.value(1)
		}
	}
	if n, ok := doc["repeat"].(int64); ok {
		lengthen(doc, int(min(max(n, 0), maxRepeat)))
	}
	act := &expr.Activation{Self: doc, Children: map[string][]any{}, Pods: []any{}}
	if s, ok := doc["self"].(map[string]any); ok {
		act.Self = s
	}
	if item, ok := doc["item"]; ok {
		act.Item, act.HasItem = item, true
		act.Key, _ = doc["key"].(string)
	}
	if pods, ok := doc["pods"].([]any); ok {
		act.Pods = pods
	}
	if children, ok := doc["children"].(map[string]any); ok {
		for k, v := range children {
			if l, ok := v.([]any); ok {
				act.Children[k] = l
			}
		}
	}
	for _, name := range childNames() {
		if _, ok := act.Children[name]; !ok {
			act.Children[name] = []any{}
		}
	}
	act.Pod, _ = doc["pod"].(map[string]any)
	if act.Pod == nil && len(act.Pods) > 0 {
		act.Pod, _ = act.Pods[0].(map[string]any)
	}
	if r, ok := doc["replica"].(int64); ok {
		act.Replica, act.HasReplica = r, true
	}
	return act
}

// maxFuzzInput bounds FuzzEval's input: long lists come from "repeat" (see lengthen), and
// big inputs make each run, and above all each minimization, slow.
const maxFuzzInput = 8 << 10

// FuzzEval evaluates the expressions of one catalog definition (or extraExprs), chosen by the
// first argument, against objects built from the second. Errors are fine — a malformed object
// yields an Unknown status with the error as the reason — but no input may panic or hang, and
// every error must name the definition field of its expression, since that is what tells
// users which rule could not read the object.
func FuzzEval(f *testing.F) {
	groups, err := catalogExprs()
	if err != nil {
		f.Fatalf("compiling the catalog's expressions: %v", err)
	}
	seed := func(v any) {
		raw, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		for i := range groups {
			f.Add(uint8(i), raw)
		}
	}
	jobSet := map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "train", "labels": map[string]any{"a": "b"}},
		"spec": map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "workers", "replicas": 2, "template": map[string]any{"spec": map[string]any{"parallelism": 2, "completions": 1}}},
		}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Failed", "status": "True", "message": "boom"}}},
	}
	pod := map[string]any{"metadata": map[string]any{"name": "p", "labels": map[string]any{"jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": "1"}}, "status": map[string]any{"phase": "Running"}}
	seed(map[string]any{"self": jobSet, "item": jobSet["spec"].(map[string]any)["replicatedJobs"].([]any)[0], "key": "0", "pods": []any{pod}, "pod": pod,
		"children": map[string]any{"jobs": []any{map[string]any{"status": map[string]any{"active": 1}}}}, "replica": 1})
	// Wrong types where the catalog expects numbers, lists and objects.
	seed(map[string]any{"self": map[string]any{"spec": map[string]any{"replicas": "two", "replicatedJobs": "x", "suspend": "yes"}, "status": map[string]any{"conditions": "oops"}},
		"item": map[string]any{"replicas": []any{1}, "template": "t"}, "pods": []any{"not a pod", nil}, "pod": map[string]any{"metadata": map[string]any{"labels": []any{}}}})
	// Nulls everywhere, negative and huge numbers.
	seed(map[string]any{"self": map[string]any{"metadata": nil, "spec": map[string]any{"replicas": -5, "leaderWorkerTemplate": map[string]any{"size": int64(1) << 62}}, "status": nil},
		"item": nil, "key": "", "replica": -1})
	seed(map[string]any{"self": map[string]any{"spec": map[string]any{"gpus": "4Gi", "endpoint": "http://a:80/x", "address": "10.1.2.3", "version": "1.2.3",
		"items": []any{map[string]any{"name": "a", "replicas": 3}, map[string]any{"name": 2}}, "replicas": 1}, "metadata": map[string]any{"name": "ab-12", "labels": map[string]any{"ab": "c"}}}})
	// Lists longer than the cost estimate assumes (expr.MaxCollection): cost-tracked
	// expressions must still end.
	long := []any{map[string]any{"type": "Ready", "status": "True", "replicas": 1}, map[string]any{"type": "Failed", "status": "False", "name": "x"}}
	seed(map[string]any{"repeat": maxRepeat, "self": map[string]any{"spec": map[string]any{"items": long, "replicatedJobs": long}, "status": map[string]any{"conditions": long}}, "pods": long,
		"children": map[string]any{"jobs": long, "pods": long}})
	f.Add(uint8(0), []byte{})
	f.Add(uint8(1), []byte("not json at all, generated instead"))
	f.Add(uint8(2), []byte{7, 3, 9, 200, 6, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})

	f.Fuzz(func(t *testing.T, group uint8, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		act := envelope(data)
		for _, p := range groups[int(group)%len(groups)] {
			var err error
			switch p.want {
			case expr.Bool:
				_, err = p.EvalBool(act)
			case expr.Int, expr.IntOrString:
				_, err = p.EvalInt(act)
			case expr.String:
				_, err = p.EvalString(act)
			case expr.StringMap:
				_, err = p.EvalStringMap(act)
			case expr.List:
				_, err = p.EvalList(act)
			}
			if err != nil && !strings.HasPrefix(err.Error(), p.Field+": ") {
				t.Fatalf("%s (%s): error does not name the field: %v", p.Field, p.Source, err)
			}
		}
	})
}
