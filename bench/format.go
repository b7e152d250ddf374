package bench

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

func throttledByVerb(l map[string]LimiterStats) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if l[k].Throttled > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f of %.0f", k, l[k].Throttled, l[k].Waits))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func methods(req map[string]float64) string {
	keys := make([]string, 0, len(req))
	for k := range req {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, req[k])
	}
	return strings.Join(parts, ", ")
}

func fmtNum(v *float64) string {
	if v == nil {
		return "—"
	}
	if *v >= 100 {
		return fmtInt(*v)
	}
	if *v != 0 && math.Abs(*v) < 1 {
		return strconv.FormatFloat(*v, 'g', 3, 64) // 0.895 stays 0.895, not 0.9
	}
	return trimFloat(*v)
}

// fmtInt formats a number rounded to an integer with thousands separators.
func fmtInt(v float64) string {
	n := int64(v + 0.5)
	if v < 0 {
		n = int64(v - 0.5)
	}
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func joinFloats(v []float64) string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = trimFloat(f)
	}
	return strings.Join(parts, ", ")
}

func shortPkg(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/workmap/workmap/")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
