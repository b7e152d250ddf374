package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MicroResult is one testing.B benchmark: the medians over its -count runs.
type MicroResult struct {
	Name        string  `json:"name"` // without the -GOMAXPROCS suffix
	Package     string  `json:"package"`
	Runs        int     `json:"runs"`
	NsPerOp     float64 `json:"ns_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	// Metrics are the benchmark's own metrics (b.ReportMetric), by unit: e.g. ns/domain.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// MicroOptions say which benchmarks to run and how.
type MicroOptions struct {
	Dir       string   // the module root
	Packages  []string // e.g. ./definitions/catalog
	Bench     string   // -bench regexp (default ".")
	Count     int      // -count (default 5)
	Benchtime string   // -benchtime (default the go test default)
}

// Args is the `go test` command line of the options.
func (o MicroOptions) Args() []string {
	bench, count := o.Bench, o.Count
	if bench == "" {
		bench = "."
	}
	if count <= 0 {
		count = 5
	}
	args := []string{"test", "-run=^$", "-bench=" + bench, "-benchmem", "-count=" + strconv.Itoa(count)}
	if o.Benchtime != "" {
		args = append(args, "-benchtime="+o.Benchtime)
	}
	return append(args, o.Packages...)
}

// RunMicro runs the benchmarks with `go test`, copying its output to log, and returns the
// raw output (benchstat's input format) and the parsed medians.
func RunMicro(ctx context.Context, o MicroOptions, log io.Writer) ([]byte, []MicroResult, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", o.Args()...)
	cmd.Dir = o.Dir
	cmd.Stdout = io.MultiWriter(&out, log)
	cmd.Stderr = io.MultiWriter(&out, log)
	if err := cmd.Run(); err != nil {
		return out.Bytes(), nil, fmt.Errorf("go %s: %w", strings.Join(o.Args(), " "), err)
	}
	res, err := ParseBench(out.Bytes())
	return out.Bytes(), res, err
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// ParseBench parses `go test -bench -benchmem` output into one result per benchmark (per
// package), with the median of each metric over the repeated runs.
func ParseBench(out []byte) ([]MicroResult, error) {
	type key struct{ pkg, name string }
	samples := map[key]map[string][]float64{}
	var order []key
	pkg := ""
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		line := s.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		k := key{pkg, m[1]}
		if samples[k] == nil {
			samples[k] = map[string][]float64{}
			order = append(order, k)
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %w", line, err)
			}
			samples[k][f[i+1]] = append(samples[k][f[i+1]], v)
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no benchmark results in the go test output")
	}
	out2 := make([]MicroResult, 0, len(order))
	for _, k := range order {
		m := samples[k]
		res := MicroResult{
			Name: k.name, Package: k.pkg, Runs: len(m["ns/op"]),
			NsPerOp: median(m["ns/op"]), BytesPerOp: median(m["B/op"]), AllocsPerOp: median(m["allocs/op"]),
		}
		for unit, v := range m {
			switch unit {
			case "ns/op", "B/op", "allocs/op":
			default:
				if res.Metrics == nil {
					res.Metrics = map[string]float64{}
				}
				res.Metrics[unit] = median(v)
			}
		}
		out2 = append(out2, res)
	}
	sort.SliceStable(out2, func(i, j int) bool { return out2[i].Package < out2[j].Package })
	return out2, nil
}

// Find returns the result of the named benchmark (without the Benchmark prefix or with it).
func Find(results []MicroResult, name string) (MicroResult, bool) {
	if !strings.HasPrefix(name, "Benchmark") {
		name = "Benchmark" + name
	}
	for _, r := range results {
		if r.Name == name {
			return r, true
		}
	}
	return MicroResult{}, false
}

// TopAllocations runs one benchmark with a memory profile and returns pprof's top lines by
// bytes allocated, to say where a per-operation cost comes from.
func TopAllocations(ctx context.Context, dir, pkg, bench string, lines int) (string, error) {
	tmp, err := tempDir()
	if err != nil {
		return "", err
	}
	defer removeAll(tmp)
	bin, prof := tmp+"/pkg.test", tmp+"/mem.prof"
	test := exec.CommandContext(ctx, "go", "test", "-run=^$", "-bench=^"+bench+"$", "-benchmem", "-memprofile="+prof, "-o="+bin, pkg)
	test.Dir = dir
	if out, err := test.CombinedOutput(); err != nil {
		return "", fmt.Errorf("profiling %s: %v\n%s", bench, err, out)
	}
	top := exec.CommandContext(ctx, "go", "tool", "pprof", "-sample_index=alloc_space", "-top", "-nodecount="+strconv.Itoa(lines), bin, prof)
	top.Dir = dir
	out, err := top.Output()
	if err != nil {
		return "", fmt.Errorf("pprof: %w", err)
	}
	var keep []string
	started := false
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "flat%") {
			started = true
		}
		if started && strings.TrimSpace(l) != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n"), nil
}
