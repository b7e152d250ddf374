package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
)

// defaultSchedulerName is the scheduler profile workmap-scheduler ships with.
const defaultSchedulerName = "workmap-scheduler"

// fieldManager names workmap in the managedFields of the objects it writes.
const fieldManager = "workmap"

// setFlags are the flags every `set` command takes.
type setFlags struct {
	files  []string
	dryRun string
	diff   bool
}

func (f *setFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVarP(&f.files, "filename", "f", nil, "manifest files to rewrite to stdout instead of changing the cluster (- reads stdin)")
	cmd.Flags().StringVar(&f.dryRun, "dry-run", "none", `"client" shows what would change without sending it; "server" also has the API server validate it (admission included) without persisting it`)
	cmd.Flags().BoolVar(&f.diff, "diff", false, "print a unified diff of each changed object (with -f: instead of the rewritten manifest)")
}

// podTemplateEdit is one field to write into every pod template of a workload, named as a
// path relative to a PodTemplateSpec (spec.schedulerName, metadata.labels["team"]).
type podTemplateEdit struct {
	field string
	value any
}

func (e podTemplateEdit) String() string {
	if s, ok := e.value.(string); ok {
		return e.field + "=" + s
	}
	b, _ := json.Marshal(e.value)
	return e.field + "=" + string(b)
}

func newSetCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Change every pod template of a workload through its definition",
		Long: `set writes a field into the pod template of every role and every instance of a workload
(a RayCluster's head and each worker group, a Dynamo graph's every service), wherever its
definition says the templates are. Live, it updates the object in the cluster with its
resourceVersion, so a change made in between is never overwritten; with -f it rewrites the
manifest to stdout and keeps the file's other documents and comments.

Roles whose pods come from a template the operator builds itself are left alone. Operators
may refuse some changes to existing objects (JobSet's pod templates are immutable, apart
from labels, annotations, node selector and tolerations while it is suspended); rewrite the
manifest with -f before creating the object instead.`,
	}
	cmd.AddCommand(newSetSchedulerCommand(o), newSetPodTemplateCommand(o))
	return cmd
}

func newSetSchedulerCommand(o *options) *cobra.Command {
	var f setFlags
	var name string
	cmd := &cobra.Command{
		Use:               "scheduler (KIND/NAME | KIND NAME | -f FILE)",
		ValidArgsFunction: o.completeWorkload,
		Short:             "Set the scheduler (spec.schedulerName) of every pod of a workload",
		Example: `  # Put every pod of a RayCluster, head and workers, on workmap-scheduler
  workmap set scheduler raycluster/train -n ml
  # Rewrite a manifest before creating it
  workmap set scheduler -f job.yaml | kubectl apply -f -
  # See what would change
  workmap set scheduler jobset/train --name kai-scheduler --dry-run=server --diff`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				return fmt.Errorf("--name %q is not a valid scheduler name: %s", name, strings.Join(msgs, "; "))
			}
			return o.setPodTemplates(cmd.Context(), &f, args, []podTemplateEdit{{field: "spec.schedulerName", value: name}})
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&name, "name", defaultSchedulerName, "the scheduler the pods ask for")
	return cmd
}

func newSetPodTemplateCommand(o *options) *cobra.Command {
	var f setFlags
	var labels, annotations, nodeSelector map[string]string
	var priorityClass, patch string
	cmd := &cobra.Command{
		Use:               "pod-template (KIND/NAME | KIND NAME | -f FILE) [--labels K=V,...] [--annotations K=V,...] [--node-selector K=V,...] [--priority-class NAME] [--patch FILE]",
		ValidArgsFunction: o.completeWorkload,
		Short:             "Set labels, annotations, node selector, priority class or any other field of every pod template of a workload",
		Example: `  # Label every pod of a JobSet for a Kueue queue
  workmap set pod-template jobset/train --labels kueue.x-k8s.io/queue-name=team-a
  # Merge a partial pod template into every pod template of a manifest
  workmap set pod-template -f job.yaml --patch pods.yaml | kubectl apply -f -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var edits []podTemplateEdit
			for _, l := range sortedPairs(labels) {
				if err := validLabel(l[0], l[1]); err != nil {
					return fmt.Errorf("--labels: %w", err)
				}
				edits = append(edits, podTemplateEdit{field: fieldPath("metadata", "labels", l[0]), value: l[1]})
			}
			for _, a := range sortedPairs(annotations) {
				if msgs := validation.IsQualifiedName(a[0]); len(msgs) > 0 {
					return fmt.Errorf("--annotations: key %q: %s", a[0], strings.Join(msgs, "; "))
				}
				edits = append(edits, podTemplateEdit{field: fieldPath("metadata", "annotations", a[0]), value: a[1]})
			}
			for _, n := range sortedPairs(nodeSelector) {
				if err := validLabel(n[0], n[1]); err != nil {
					return fmt.Errorf("--node-selector: %w", err)
				}
				edits = append(edits, podTemplateEdit{field: fieldPath("spec", "nodeSelector", n[0]), value: n[1]})
			}
			if priorityClass != "" {
				edits = append(edits, podTemplateEdit{field: "spec.priorityClassName", value: priorityClass})
			}
			if patch != "" {
				more, err := patchEdits(patch)
				if err != nil {
					return err
				}
				edits = append(edits, more...)
			}
			if len(edits) == 0 {
				return fmt.Errorf("nothing to set: give --labels, --annotations, --node-selector, --priority-class or --patch")
			}
			return o.setPodTemplates(cmd.Context(), &f, args, edits)
		},
	}
	f.add(cmd)
	cmd.Flags().StringToStringVar(&labels, "labels", nil, "labels to set on every pod (K=V,...)")
	cmd.Flags().StringToStringVar(&annotations, "annotations", nil, "annotations to set on every pod (K=V,...)")
	cmd.Flags().StringToStringVar(&nodeSelector, "node-selector", nil, "node selector entries to set on every pod (K=V,...)")
	cmd.Flags().StringVar(&priorityClass, "priority-class", "", "the priority class of every pod")
	cmd.Flags().StringVar(&patch, "patch", "", "a partial pod template (YAML or JSON: metadata.labels, metadata.annotations, spec) merged into every pod template: objects merge key by key, lists and other values replace")
	return cmd
}

func validLabel(k, v string) error {
	if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
		return fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
		return fmt.Errorf("value %q of %s: %s", v, k, strings.Join(msgs, "; "))
	}
	return nil
}

func sortedPairs(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for k, v := range m {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// fieldPath renders the path of a map entry: metadata.labels["team"].
func fieldPath(names ...string) string {
	return strings.Join(names[:len(names)-1], ".") + `["` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(names[len(names)-1]) + `"]`
}

// containerLists are the pod spec fields a patch may not replace: every container of every
// role would become the patch's.
var containerLists = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true}

// patchEdits turns a partial PodTemplateSpec into one edit per field it sets.
func patchEdits(file string) ([]podTemplateEdit, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("--patch %s: malformed YAML: %v", file, err)
	}
	var doc any
	if err := utiljson.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("--patch %s: %v", file, err)
	}
	top, ok := doc.(map[string]any)
	if !ok || len(top) == 0 {
		return nil, fmt.Errorf("--patch %s: expected a partial pod template (an object with metadata and/or spec)", file)
	}
	var edits []podTemplateEdit
	var walk func(at []string, v any) error
	walk = func(at []string, v any) error {
		where := renderPath(at)
		switch v := v.(type) {
		case nil:
			return fmt.Errorf("--patch %s: %s is null: removing a field is not supported", file, where)
		case map[string]any:
			if len(v) == 0 {
				edits = append(edits, podTemplateEdit{field: where, value: v})
				return nil
			}
			for _, k := range sortedKeys(v) {
				if err := walk(append(append([]string(nil), at...), k), v[k]); err != nil {
					return err
				}
			}
			return nil
		case []any:
			if len(at) == 2 && at[0] == "spec" && containerLists[at[1]] {
				return fmt.Errorf("--patch %s: %s would replace every container of every role with these; --patch cannot set containers", file, where)
			}
		}
		edits = append(edits, podTemplateEdit{field: where, value: v})
		return nil
	}
	for _, k := range sortedKeys(top) {
		switch k {
		case "metadata":
			md, ok := top[k].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("--patch %s: metadata must be an object", file)
			}
			for _, mk := range sortedKeys(md) {
				if mk != "labels" && mk != "annotations" {
					return nil, fmt.Errorf("--patch %s: metadata.%s: only metadata.labels and metadata.annotations can be set in pod templates", file, mk)
				}
				if _, ok := md[mk].(map[string]any); !ok {
					return nil, fmt.Errorf("--patch %s: metadata.%s must be an object of strings", file, mk)
				}
				if err := walk([]string{"metadata", mk}, md[mk]); err != nil {
					return nil, err
				}
			}
		case "spec":
			if err := walk([]string{"spec"}, top[k]); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("--patch %s: unknown field %q: a pod template has metadata and spec", file, k)
		}
	}
	return edits, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setPodTemplates applies the edits to the workload the arguments name (live) or to every
// workload of the -f files (offline).
func (o *options) setPodTemplates(ctx context.Context, f *setFlags, args []string, edits []podTemplateEdit) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch f.dryRun {
	case "none", "client", "server":
	default:
		return fmt.Errorf(`--dry-run must be "none", "client" or "server", not %q`, f.dryRun)
	}
	if len(f.files) > 0 {
		if len(args) > 0 {
			return fmt.Errorf("give either -f FILE or KIND/NAME, not both")
		}
		if f.dryRun != "none" {
			return fmt.Errorf("--dry-run is for changes to the cluster; -f only writes the rewritten manifest to stdout")
		}
		return o.setInFiles(f, edits)
	}
	return o.setLive(ctx, f, args, edits)
}

// applyEdits writes every edit into obj through the definition, all or nothing, and returns
// how many pod templates were written.
func applyEdits(def *definitions.Definition, obj *unstructured.Unstructured, edits []podTemplateEdit) (int, error) {
	work := obj.DeepCopy()
	templates := 0
	for _, e := range edits {
		n, err := def.SetPodTemplateField(work, e.field, e.value)
		if err != nil {
			return 0, fmt.Errorf("%s: cannot set %s: %w", objectRef(obj), e.field, err)
		}
		if n == 0 {
			return 0, fmt.Errorf("%s: no pod template to set %s in: no role of its definition has an instance whose pod template the object holds", objectRef(obj), e.field)
		}
		templates = max(templates, n)
	}
	obj.Object = work.Object
	return templates, nil
}

// objectRef names an object as kubectl does: jobset.jobset.x-k8s.io/train.
func objectRef(obj *unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	kind := strings.ToLower(gk.Kind)
	if gk.Group != "" {
		kind += "." + gk.Group
	}
	name := obj.GetName()
	if name == "" && obj.GetGenerateName() != "" {
		name = obj.GetGenerateName() + "*"
	}
	return kind + "/" + name
}

func summary(ref string, templates int, edits []podTemplateEdit, changed bool, dryRun string) string {
	what := make([]string, len(edits))
	for i, e := range edits {
		what[i] = e.String()
	}
	plural := "s"
	if templates == 1 {
		plural = ""
	}
	line := fmt.Sprintf("%s: %d pod template%s set (%s)", ref, templates, plural, strings.Join(what, ", "))
	if !changed {
		line = fmt.Sprintf("%s: unchanged (%d pod template%s already have %s)", ref, templates, plural, strings.Join(what, ", "))
	}
	switch dryRun {
	case "client":
		line += " (dry run)"
	case "server":
		line += " (server dry run)"
	}
	return line
}

// setLive changes the workload in the cluster: one read, the edits, one update carrying the
// resourceVersion read (the API server refuses it if the object changed in between). A
// refused update is done again from a fresh read (a controller updating the object at the
// same moment is common), a few times.
func (o *options) setLive(ctx context.Context, f *setFlags, args []string, edits []podTemplateEdit) error {
	arg, err := workloadArgOf(args)
	if err != nil {
		return err
	}
	r, err := o.workloadReader()
	if err != nil {
		return err
	}
	k, before, err := r.readObject(ctx, arg)
	if err != nil {
		return err
	}
	ref := objectRef(before)
	var after *unstructured.Unstructured
	var templates int
	var changed bool
	attempt := 0
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if attempt++; attempt > 1 {
			if before, err = r.dynamic.Resource(k.resource).Namespace(before.GetNamespace()).Get(ctx, before.GetName(), metav1.GetOptions{}); err != nil {
				return fmt.Errorf("reading %s again: %w", ref, r.explain(err))
			}
		}
		after = before.DeepCopy()
		if templates, err = applyEdits(k.def, after, edits); err != nil {
			return err
		}
		changed = !reflect.DeepEqual(before.Object, after.Object)
		if !changed || f.dryRun == "client" {
			return nil
		}
		opts := metav1.UpdateOptions{FieldManager: fieldManager}
		if f.dryRun == "server" {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := r.dynamic.Resource(k.resource).Namespace(after.GetNamespace()).Update(ctx, after, opts)
		return err
	})
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s was changed by someone else each time workmap was setting it (%d tries); nothing was written, run the command again", ref, attempt)
	case err != nil && errors.As(err, new(apierrors.APIStatus)):
		if fields := immutableFields(err); len(fields) > 0 {
			return fmt.Errorf("updating %s: refused: %s cannot change once the %s exists; rewrite its manifest with `workmap set ... -f FILE` and create it again (delete it first)",
				ref, strings.Join(fields, ", "), before.GetKind())
		}
		return fmt.Errorf("updating %s: %w", ref, r.explain(err))
	case err != nil:
		return err
	}
	if f.diff && changed {
		d, err := objectDiff(ref, before, after)
		if err != nil {
			return err
		}
		fmt.Fprint(o.out, d)
	}
	fmt.Fprintln(o.out, summary(ref, templates, edits, changed, f.dryRun))
	if note := stalePodsNote(ctx, r, k.def, after, edits, f.dryRun != "none"); note != "" {
		fmt.Fprintln(o.out, note)
	}
	return nil
}

// invalidField finds the fields of an API server's or admission webhook's refusal, as
// field.ErrorList prints them: "spec.replicatedJobs: Invalid value: ...".
var invalidField = regexp.MustCompile(`(?:^|[:;,\[]\s)([A-Za-z][\w.\[\]"-]*): Invalid value: `)

// immutableFields are the fields an update was refused for because they are immutable (an
// object's pod templates, for many operators), named once each; none when err is another
// refusal. The refusal's own message, which repeats the whole old value (kilobytes for a pod
// template), is not repeated.
func immutableFields(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !strings.Contains(status.Status().Message, "immutable") {
		return nil
	}
	var fields []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Field != "" && strings.Contains(c.Message, "immutable") {
				fields = append(fields, c.Field)
			}
		}
	}
	if len(fields) == 0 {
		for _, m := range invalidField.FindAllStringSubmatch(status.Status().Message, -1) {
			fields = append(fields, m[1])
		}
	}
	slices.Sort(fields)
	return slices.Compact(fields)
}

// objectDiff is a unified diff of two versions of a live object as YAML (without
// managedFields, which only the API server reads).
func objectDiff(ref string, before, after *unstructured.Unstructured) (string, error) {
	render := func(u *unstructured.Unstructured) (string, error) {
		u = u.DeepCopy()
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		b, err := yaml.Marshal(u.Object)
		return string(b), err
	}
	a, err := render(before)
	if err != nil {
		return "", err
	}
	b, err := render(after)
	if err != nil {
		return "", err
	}
	return unifiedDiff(ref, ref+" (set)", a, b)
}

func unifiedDiff(from, to, a, b string) (string, error) {
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: from, ToFile: to, Context: 3,
	})
}
