package bench

import "testing"

const sampleBench = `goos: linux
goarch: amd64
pkg: github.com/workmap/workmap/definitions/catalog
cpu: Intel(R) Xeon(R) Processor
BenchmarkExpand-2        	   16366	     69577 ns/op	   28584 B/op	     241 allocs/op
BenchmarkExpand-2        	   16000	     70000 ns/op	   28584 B/op	     241 allocs/op
BenchmarkExpand-2        	   16000	     60000 ns/op	   28584 B/op	     241 allocs/op
BenchmarkPodDecision-2   	 2447348	       491.7 ns/op	     208 B/op	       7 allocs/op
PASS
ok  	github.com/workmap/workmap/definitions/catalog	4.273s
pkg: github.com/workmap/workmap/grouper
BenchmarkDecideWarm   	  264693	      4298 ns/op	    1256 B/op	      22 allocs/op
PASS
pkg: github.com/workmap/workmap/plugin
BenchmarkTopologyPlacement/racks=10/free-2         	    4117	    283515 ns/op	     28352 ns/domain	  105017 B/op	    1396 allocs/op
BenchmarkTopologyPlacement/racks=10/free-2         	    4000	    300000 ns/op	     30000 ns/domain	  105017 B/op	    1396 allocs/op
PASS
`

func TestParseBench(t *testing.T) {
	res, err := ParseBench([]byte(sampleBench))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("got %d results, want 4: %+v", len(res), res)
	}
	e, ok := Find(res, "Expand")
	if !ok || e.Runs != 3 || e.NsPerOp != 69577 || e.AllocsPerOp != 241 || e.Package != "github.com/workmap/workmap/definitions/catalog" {
		t.Errorf("Expand = %+v", e)
	}
	d, ok := Find(res, "BenchmarkDecideWarm")
	if !ok || d.NsPerOp != 4298 || d.BytesPerOp != 1256 || d.AllocsPerOp != 22 || d.Package != "github.com/workmap/workmap/grouper" {
		t.Errorf("DecideWarm = %+v", d)
	}
	p, ok := Find(res, "BenchmarkTopologyPlacement/racks=10/free")
	if !ok || p.Runs != 2 || p.NsPerOp != 291757.5 || p.Metrics["ns/domain"] != 29176 || len(p.Metrics) != 1 {
		t.Errorf("TopologyPlacement = %+v", p)
	}
	if e.Metrics != nil {
		t.Errorf("Expand has metrics of its own: %v", e.Metrics)
	}
	if _, err := ParseBench([]byte("PASS\n")); err == nil {
		t.Error("no error for output without benchmarks")
	}
}
