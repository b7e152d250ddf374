package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
)

// The text formats show quantities as a person reads them: cpu in cores (0.5 cores, 104.5
// cores), memory and storage in binary units with at most three significant digits (7.6Gi,
// 512Mi), other resources as written. JSON and YAML keep the exact quantities.

// quantityText renders one resource's quantity for the text formats.
func quantityText(name corev1.ResourceName, q apiresource.Quantity) string {
	switch {
	case name == corev1.ResourceCPU:
		return coresText(q)
	case isBytes(name):
		return bytesText(q)
	}
	return q.String()
}

// isBytes says a resource is counted in bytes: memory, storage, hugepages.
func isBytes(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
		return true
	}
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// coresText is a cpu quantity in cores, exact to the millicore: 1 core, 0.5 cores, 104.5 cores.
func coresText(q apiresource.Quantity) string {
	cores := strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
	if cores == "1" {
		return "1 core"
	}
	return cores + " cores"
}

var binaryUnits = []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// bytesText is a quantity of bytes in the largest binary unit it fills, rounded to one
// decimal below 100 and to a whole number above: 7.6Gi, 37.5Gi, 512Mi, 1000Mi, 112Gi.
func bytesText(q apiresource.Quantity) string {
	n := q.Value()
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, unit := float64(n), -1
	for v >= 1024 && unit < len(binaryUnits)-1 {
		v /= 1024
		unit++
	}
	s := roundedText(v)
	if s == "1024" && unit < len(binaryUnits)-1 {
		s, unit = "1", unit+1
	}
	return s + binaryUnits[unit]
}

// roundedText keeps at most one decimal, and none from 100 on.
func roundedText(v float64) string {
	if r := math.Round(v*10) / 10; r < 100 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
}

// resourcesText renders every resource, sorted by name: "cpu 2 cores, memory 8Gi,
// nvidia.com/gpu 4"; "none" when there are none.
func resourcesText(r corev1.ResourceList) string {
	if len(r) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(r))
	for _, name := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, fmt.Sprintf("%s %s", name, quantityText(name, r[name])))
	}
	return strings.Join(parts, ", ")
}

// otherResources renders cpu, memory and then the other resources not counted as GPUs, in
// parentheses: " (cpu 6 cores, memory 24Gi)"; "" when there are none.
func otherResources(r corev1.ResourceList, gpus map[string]float64) string {
	var parts []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", name, quantityText(name, q)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r)) {
		if _, isGPU := gpus[string(name)]; name != corev1.ResourceCPU && name != corev1.ResourceMemory && !isGPU {
			parts = append(parts, fmt.Sprintf("%s %s", name, quantityText(name, r[name])))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// gpuText is a count of GPUs, which may be fractional: 1 GPU, 0.5 GPUs, 12 GPUs.
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
