// Package karta converts Karta definitions (run.ai/v1alpha1 Karta, formerly
// optimization.nvidia.com/v1alpha1 ResourceInterface) into workmap WorkloadDefinitions.
//
// Karta describes a workload kind with jq expressions. Simple jq paths (`.a.b`, `.a[]`,
// `.a["k"]`, `.a[0]`) become workmap paths (`a.b`, `a[*]`, `a["k"]`, `a[0]`) where a location is
// needed (pod templates, pod specs, pod fields) and CEL with optional syntax where a value is
// needed (replicas, instance names, pod selectors, status, gangs). A path that goes through
// the same `[]` as its component's pod template is relative to `item`; other object paths are
// relative to `self`, pod-side paths to `pod`. A `path // literal` default in a value becomes
// `.orValue(literal)` (with a warning: jq also applies it to null and false).
//
// The mapping: every component with a specDefinition becomes a role; the root's kind becomes
// the workload; child component kinds and additionalChildKinds become children (pods excepted:
// workmap finds them through spec.pods); status mappings become rules ordered Failed,
// Completed, Degraded, Running, Initializing, Suspended, then `Pending when true`; pod groups
// become gang groups whose scope follows their groupByKeyPaths.
//
// Nothing is dropped silently: every part of the input that cannot be converted (pipes,
// functions, arithmetic, filters, fields workmap has no equivalent for, unknown fields) is
// reported as an Issue naming its field path in the input, and every conversion that changes
// meaning (status mappings that become ordered first-match rules, group-level gang sizes) is
// reported as a SemanticChange warning. Convert checks that each definition it returns
// compiles.
package karta
