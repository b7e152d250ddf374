package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// print writes workloads in the chosen output format: the text formats use printText;
// every other format prints the versioned document (printDocument): a WorkloadTree when
// the command names one workload (KIND/NAME), a List of them when it reads files.
func (o *options) print(f *outputFlags, ws []*definitions.Workload, one bool, printText func(io.Writer, *definitions.Workload, bool)) error {
	if f.isText() {
		color := useColor(o.out)
		for i, w := range ws {
			if i > 0 {
				fmt.Fprintln(o.out)
			}
			printText(o.out, w, color)
			if f.format() == "wide" {
				printWide(o.out, w)
			}
		}
		return nil
	}
	if one && len(ws) == 1 {
		return f.printDocument(o.out, definitions.NewWorkloadTree(ws[0]), workloadRef(ws[0]))
	}
	return f.printTrees(o.out, ws)
}

// printTrees writes the List of the workloads' documents.
func (f *outputFlags) printTrees(out io.Writer, ws []*definitions.Workload) error {
	refs := make([]*unstructured.Unstructured, len(ws))
	for i, w := range ws {
		refs[i] = workloadRef(w)
	}
	return f.printDocument(out, definitions.NewWorkloadTreeList(ws), refList(refs))
}

// documentFormats are the output formats of a versioned document, after a command's text
// formats.
var documentFormats = []string{"json", "yaml", "name", "jsonpath=…", "jsonpath-file=…", "go-template=…", "go-template-file=…", "custom-columns=…", "custom-columns-file=…"}

// outputFlags are a command's -o and the flags of kubectl's template printers.
type outputFlags struct {
	cmd *cobra.Command
	out *string
	// text are the command's own text formats ("" is the default table).
	text     []string
	template *genericclioptions.KubeTemplatePrintFlags
}

// addOutputFlags adds -o (default def) with the command's text formats, and --template and
// --allow-missing-template-keys.
func addOutputFlags(cmd *cobra.Command, out *string, def string, text ...string) *outputFlags {
	f := &outputFlags{cmd: cmd, out: out, text: text, template: genericclioptions.NewKubeTemplatePrintFlags()}
	names := f.formats()
	cmd.Flags().StringVarP(out, "output", "o", def, "output format: "+strings.Join(names, ", "))
	f.template.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var completions []string
		for _, n := range names {
			completions = append(completions, strings.TrimSuffix(n, "…"))
		}
		return completions, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	return f
}

// format is the output format asked for: --template alone means go-template, as in kubectl.
func (f *outputFlags) format() string {
	if t := f.template.TemplateArgument; t != nil && *t != "" && !f.cmd.Flags().Changed("output") {
		return "go-template"
	}
	return *f.out
}

// check fails on an output format the command does not have, before any work is done.
func (f *outputFlags) check() error {
	switch format := f.format(); {
	case f.isText(), format == "json", format == "yaml", format == "name":
		return nil
	default:
		_, err := f.printer(format)
		return err
	}
}

// isText says the command prints one of its own text formats.
func (f *outputFlags) isText() bool { return slices.Contains(f.text, f.format()) }

// printDocument writes a versioned document (one object, or a List) in a document format:
// JSON and YAML with the fields in their documented order; jsonpath, go-template and
// custom-columns (kubectl's printers) over the same document; name prints what names
// (an object or a list) names, kind.group/name per line.
func (f *outputFlags) printDocument(out io.Writer, doc any, names runtime.Object) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	format := f.format()
	switch format {
	case "json":
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err = out.Write(buf.Bytes())
		return err
	case "yaml":
		y, err := orderedYAML(b)
		if err != nil {
			return err
		}
		_, err = out.Write(y)
		return err
	case "name":
		return (&printers.NamePrinter{}).PrintObj(names, out)
	}
	p, err := f.printer(format)
	if err != nil {
		return err
	}
	obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, b)
	if err != nil {
		return err
	}
	return p.PrintObj(obj, out)
}

// printer is kubectl's printer of a template format: jsonpath, go-template, custom-columns.
func (f *outputFlags) printer(format string) (printers.ResourcePrinter, error) {
	if format != "" {
		if p, err := f.template.ToPrinter(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
			return p, err
		}
		if p, err := customColumnsPrinter(format); p != nil || err != nil {
			return p, err
		}
	}
	return nil, fmt.Errorf("unknown output format %q: use %s", format, strings.Join(f.formats(), ", "))
}

// formats names every output format of the command, its text formats first.
func (f *outputFlags) formats() []string {
	var names []string
	for _, t := range f.text {
		if t != "" {
			names = append(names, t)
		}
	}
	return append(names, documentFormats...)
}

// columnPath is a custom column's path as kubectl takes it: .a.b, a.b, {.a.b} or {a.b}.
var columnPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// customColumnsPrinter is kubectl's -o custom-columns=HEADER:PATH,… (or
// custom-columns-file=FILE: a line of headers, a line of paths): one row per object, each cell
// the path's values joined by commas, <none> when it has none. The columns are evaluated by
// client-go's jsonpath and laid out by cli-runtime's table printer (kubectl's own
// custom-columns printer comes with the whole of kubectl's get command, which costs every run
// tens of milliseconds to load). It returns nil for another format.
func customColumnsPrinter(format string) (printers.ResourcePrinter, error) {
	var headers, paths []string
	if spec, ok := strings.CutPrefix(format, "custom-columns="); ok {
		for _, part := range strings.Split(spec, ",") {
			h, p, ok := strings.Cut(part, ":")
			if !ok {
				return nil, fmt.Errorf("custom-columns: %q is not HEADER:PATH", part)
			}
			headers, paths = append(headers, h), append(paths, p)
		}
	} else if file, ok := strings.CutPrefix(format, "custom-columns-file="); ok {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 {
			return nil, fmt.Errorf("%s: want two lines, the headers and their paths", file)
		}
		headers, paths = strings.Fields(lines[0]), strings.Fields(lines[1])
		if len(headers) != len(paths) {
			return nil, fmt.Errorf("%s: %d headers but %d paths", file, len(headers), len(paths))
		}
	} else {
		return nil, nil
	}
	columns := make([]metav1.TableColumnDefinition, len(paths))
	parsers := make([]*jsonpath.JSONPath, len(paths))
	for i, p := range paths {
		m := columnPath.FindStringSubmatch(p)
		if m == nil || headers[i] == "" {
			return nil, fmt.Errorf("custom-columns: %q is not HEADER:PATH (a path like .totals.gpus)", headers[i]+":"+p)
		}
		parsers[i] = jsonpath.New(headers[i]).AllowMissingKeys(true)
		if err := parsers[i].Parse("{." + m[1] + m[2] + "}"); err != nil {
			return nil, fmt.Errorf("custom-columns: %s: %w", p, err)
		}
		columns[i] = metav1.TableColumnDefinition{Name: headers[i], Type: "string"}
	}
	return printers.ResourcePrinterFunc(func(obj runtime.Object, out io.Writer) error {
		items := []runtime.Object{obj}
		if meta.IsListType(obj) {
			var err error
			if items, err = meta.ExtractList(obj); err != nil {
				return err
			}
		}
		table := &metav1.Table{ColumnDefinitions: columns}
		for _, item := range items {
			u, ok := item.(runtime.Unstructured)
			if !ok {
				return fmt.Errorf("custom-columns: cannot print %T", item)
			}
			cells := make([]any, len(parsers))
			for i, p := range parsers {
				results, err := p.FindResults(u.UnstructuredContent())
				if err != nil {
					return err
				}
				var values []string
				for _, rs := range results {
					for _, v := range rs {
						values = append(values, fmt.Sprint(v.Interface()))
					}
				}
				if len(values) == 0 {
					values = []string{"<none>"}
				}
				cells[i] = strings.Join(values, ",")
			}
			table.Rows = append(table.Rows, metav1.TableRow{Cells: cells})
		}
		return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(table, out)
	}), nil
}

// workloadRef is the workload's own object, for -o name: jobset.jobset.x-k8s.io/train.
func workloadRef(w *definitions.Workload) *unstructured.Unstructured {
	return nameRef(w.Workload.APIVersion, w.Workload.Kind, w.Workload.Namespace, w.Workload.Name)
}

func nameRef(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func refList(refs []*unstructured.Unstructured) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": definitions.ListAPIVersion, "kind": definitions.ListKind}}
	for _, r := range refs {
		l.Items = append(l.Items, *r)
	}
	return l
}

// orderedYAML converts a JSON document to YAML, keeping the order of its keys (the fields'
// order), where converting through a map would sort them.
func orderedYAML(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := yamlNode(dec)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// stringNode is a string as the YAML encoder writes a Go string: quoted whenever a YAML 1.1
// reader (kubectl, sigs.k8s.io/yaml) would take it for another type (yes, n, 1:20, 12).
func stringNode(s string) *yaml.Node {
	var n yaml.Node
	if err := n.Encode(s); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
	}
	return &n
}

// yamlNode reads one JSON value from dec as a YAML node.
func yamlNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if t == '{' {
			n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, stringNode(k.(string)))
			}
			v, err := yamlNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return stringNode(t), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
}

// useColor is true only on a terminal, and never with NO_COLOR set.
func useColor(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

var stateColor = map[v1alpha1.State]string{
	v1alpha1.StateRunning: "32", v1alpha1.StateCompleted: "32",
	v1alpha1.StatePending: "33", v1alpha1.StateInitializing: "33", v1alpha1.StateSuspended: "33", v1alpha1.StateDegraded: "33",
	v1alpha1.StateFailed: "31", v1alpha1.StateUnknown: "35",
}

func printTree(out io.Writer, w *definitions.Workload, color bool) {
	state := string(w.Status.State)
	if color {
		state = "\x1b[" + stateColor[w.Status.State] + "m" + state + "\x1b[0m"
	}
	name := w.Workload.Name
	if w.Workload.Namespace != "" {
		name = w.Workload.Namespace + "/" + name
	}
	fmt.Fprintf(out, "%s %s  %s: %s\n", w.Workload.Kind, name, state, w.Status.Reason)
	for i, r := range w.Roles {
		branch, indent := "├─ ", "│  "
		if i == len(w.Roles)-1 {
			branch, indent = "└─ ", "   "
		}
		fmt.Fprintf(out, "%s%s  %s  %s%s\n", branch, r.Name, replicasText(r), gpuText(r.GPUs), foundText(r.PodsFound, r.Pods, r.Phases))
		for j, in := range r.Instances {
			b, sub := "├─ ", "│  "
			if j == len(r.Instances)-1 && len(r.FoundPods) == 0 {
				b, sub = "└─ ", "   "
			}
			fmt.Fprintf(out, "%s%s%s  %s%s\n", indent, b, in.Name, plural(in.Pods, "pod"), foundText(in.PodsFound, in.Pods, in.Phases))
			printPods(out, indent+sub, in.FoundPods)
		}
		printPods(out, indent, r.FoundPods)
	}
	if w.Live != nil && w.Live.Unassigned > 0 {
		fmt.Fprintf(out, "Unassigned: %s of the workload match no role\n", plural(int64(w.Live.Unassigned), "pod"))
	}
	for _, g := range w.Groups {
		fmt.Fprintf(out, "Gang %s (%s): minMember %d\n", g.Name, scopeText(g), g.MinMember)
	}
	if len(w.Groups) == 0 {
		fmt.Fprintln(out, "Gang: none")
	}
	fmt.Fprintf(out, "Total: %s, %s%s\n", plural(w.Totals.Pods, "pod"), gpuText(w.Totals.GPUs), otherResources(w.Totals.Resources, w.Totals.GPUSources))
	for _, warn := range w.Warnings {
		fmt.Fprintf(out, "Warning: %s\n", warn)
	}
}

// printWide adds, per role, the effective requests of one pod and where its template is.
func printWide(out io.Writer, w *definitions.Workload) {
	for _, r := range w.Roles {
		gpus := ""
		if len(r.GPUSources) > 0 {
			gpus = "; GPUs of the role: " + gpuSources(r.GPUSources)
		}
		fmt.Fprintf(out, "Role %s: per pod: %s%s; template at %s\n", r.Name, strings.TrimSuffix(strings.TrimPrefix(resourceList(r.PodResources), " ("), ")"), gpus, r.Location)
	}
	if len(w.Totals.GPUSources) > 1 {
		fmt.Fprintf(out, "GPUs by source: %s\n", gpuSources(w.Totals.GPUSources))
	}
}

func printPods(out io.Writer, indent string, pods []definitions.FoundPod) {
	for i, p := range pods {
		b := "├─ "
		if i == len(pods)-1 {
			b = "└─ "
		}
		node := ""
		if p.Node != "" {
			node = "  on " + p.Node
		}
		fmt.Fprintf(out, "%s%spod/%s  %s%s\n", indent, b, p.Name, p.Phase, node)
	}
}

func replicasText(r definitions.Role) string {
	if r.PodsPerReplica == 1 {
		return plural(r.Replicas, "pod")
	}
	return fmt.Sprintf("%d×%d = %s", r.Replicas, r.PodsPerReplica, plural(r.Pods, "pod"))
}

func gpuText(n float64) string {
	if n == 1 {
		return "1 GPU"
	}
	return number(n) + " GPUs"
}

// number prints a count that may be fractional (GPUs asked for by fraction): 12, 0.5.
func number(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

// gpuSources renders a GPU breakdown, sorted: "dra:gpu.nvidia.com 2, nvidia.com/gpu 8".
func gpuSources(sources map[string]float64) string {
	parts := make([]string, 0, len(sources))
	for _, k := range slices.Sorted(maps.Keys(sources)) {
		parts = append(parts, k+" "+number(sources[k]))
	}
	return strings.Join(parts, ", ")
}

func plural(n int64, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// foundText shows live pods found against those expected, with phases.
func foundText(found *int64, expected int64, phases map[string]int) string {
	if found == nil {
		return ""
	}
	parts := make([]string, 0, len(phases))
	for _, k := range slices.Sorted(maps.Keys(phases)) {
		parts = append(parts, fmt.Sprintf("%d %s", phases[k], k))
	}
	s := fmt.Sprintf("  [%d/%d found", *found, expected)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s + "]"
}

// resourceList renders every resource, sorted: " (cpu 2, memory 8Gi, nvidia.com/gpu 4)".
func resourceList(r corev1.ResourceList) string {
	var parts []string
	for name, q := range r {
		parts = append(parts, fmt.Sprintf("%s %s", name, q.String()))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return " (none)"
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// otherResources renders cpu, memory and the extended resources not counted as GPUs.
func otherResources(r corev1.ResourceList, gpus map[string]float64) string {
	var parts []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", name, q.String()))
		}
	}
	var extended []string
	for name, q := range r {
		if _, isGPU := gpus[string(name)]; name != corev1.ResourceCPU && name != corev1.ResourceMemory && !isGPU {
			extended = append(extended, fmt.Sprintf("%s %s", name, q.String()))
		}
	}
	sort.Strings(extended)
	parts = append(parts, extended...)
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
