// Package plugin is the kube-scheduler plugin that admits a gang all-or-nothing: it holds pods
// until their group is complete, waits at Permit for minMember members and rejects them together
// on failure. See SPEC §7; built in a later issue.
package plugin
