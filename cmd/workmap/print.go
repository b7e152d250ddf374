package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/workmap/workmap/definitions"
)

// print writes workloads in the chosen output format: the text formats use printText;
// every other format prints the versioned document (printDocument): a WorkloadTree when
// the command names one workload (KIND/NAME), a List of them when it reads files.
func (o *options) print(f *outputFlags, ws []*definitions.Workload, one bool, printText func(io.Writer, *definitions.Workload, textOptions)) error {
	if f.isText() {
		opts := textOptions{color: useColor(o.out), wide: f.format() == "wide", now: time.Now()}
		for i, w := range ws {
			if i > 0 {
				fmt.Fprintln(o.out)
			}
			printText(o.out, w, opts)
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
