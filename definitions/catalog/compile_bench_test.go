package catalog

import "testing"

// BenchmarkCompileCatalogCold is the cold cost of the whole embedded catalog: compiling every
// definition, as the CLI does at each start and workmap-scheduler once.
func BenchmarkCompileCatalogCold(b *testing.B) {
	raw, err := Raw()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Definitions(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(raw)), "definitions")
}
