package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/workmap/workmap/definitions"
)

// resolveKind finds the definition a kubectl-style kind names: `jobset`, `jobsets`, `JobSet`,
// `jobset.jobset.x-k8s.io` or `jobsets.jobset.x-k8s.io`.
func resolveKind(reg *definitions.Registry, arg string) (*definitions.Definition, error) {
	name, group, _ := strings.Cut(strings.ToLower(arg), ".")
	var matches []*definitions.Definition
	for _, d := range reg.All() {
		if group != "" && strings.ToLower(d.GroupKind.Group) != group {
			continue
		}
		kind := strings.ToLower(d.GroupKind.Kind)
		plural := rootResource(d, "v1").Resource
		if name == kind || name == plural {
			matches = append(matches, d)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, fmt.Errorf("unknown workload kind %q: no definition for it; see `workmap catalog list`, or pass --definitions", arg)
	}
	var names []string
	for _, d := range matches {
		names = append(names, strings.ToLower(d.GroupKind.Kind)+"."+d.GroupKind.Group)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("kind %q is ambiguous: use one of %s", arg, strings.Join(names, ", "))
}
