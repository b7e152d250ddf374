// Package plugin is workmap's kube-scheduler plugin, WorkmapGang: it admits each gang
// all-or-nothing. The pod-grouper runs inside it, on the scheduler's own informers, so a pod
// is held (PreEnqueue) until workmap has decided its group and the group has at least
// minMember pods; a gang's pods are sorted together (QueueSort); a group that cannot be
// complete fails fast (PreFilter); pods wait at Permit until minMember members hold a node,
// then are allowed together; on a failure or timeout every waiting member is rejected, its
// reservation released, and the group backed off (PostFilter, Unreserve). Members of the
// PodGroups workmap makes are bound with their pod-group label on the Binding (Bind). The
// plugin signs pods (SignPod), so the profile keeps kube-scheduler's opportunistic batching.
package plugin
