// Package access turns a request the API server refused (Forbidden) into one line that names
// the verb, the resource and where, and the role to ask for. Every command and the web view
// say a refusal the same way through it.
package access

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Refused is a request the API server refused: the verb, the resource and the namespace it
// was made in ("" for every namespace, or for a cluster-scoped resource).
type Refused struct {
	Verb      string
	Resource  schema.GroupResource
	Namespace string
	// Err is the API server's error, when there is one.
	Err error
}

// New is a refusal of verb on the resource in namespace ns.
func New(verb string, resource schema.GroupResource, ns string, err error) *Refused {
	return &Refused{Verb: verb, Resource: resource, Namespace: ns, Err: err}
}

// Error is Message: errors.As finds the Refused, and apierrors.IsForbidden still holds for an
// error of the API server (Unwrap).
func (r *Refused) Error() string { return r.Message() }

// Unwrap returns the API server's error.
func (r *Refused) Unwrap() error { return r.Err }

// Message is the whole line: what was refused, then the role to ask for.
//
//	cannot list jobs.batch in namespace ml: forbidden; ask for the built-in view role in namespace ml
func (r *Refused) Message() string { return r.Short() + "; " + r.Role() }

// Short says what was refused: `cannot list jobs.batch in namespace ml: forbidden`.
func (r *Refused) Short() string {
	return fmt.Sprintf("cannot %s %s %s: forbidden", r.Verb, r.Resource, r.Where())
}

// Where is `in namespace ml`, `cluster-wide` (a cluster-scoped resource) or `in any namespace`.
func (r *Refused) Where() string {
	switch {
	case r.Namespace != "":
		return "in namespace " + r.Namespace
	case clusterScoped[r.Resource]:
		return "cluster-wide"
	}
	return "in any namespace"
}

// Role says which role to ask for, and where it must be bound: the built-in view (or edit)
// role for what it grants; for workmap's own resources, view or edit with the aggregated
// roles workmap's install adds to them; for a workload's CRD, view once its operator
// aggregates its rules into view, or the operator's own role.
func (r *Refused) Role() string {
	role := "view"
	if writeVerbs[r.Verb] {
		role = "edit"
	} else if !readVerbs[r.Verb] {
		return fmt.Sprintf("ask for a role that grants %s on %s %s", r.Verb, r.Resource, r.binding())
	}
	switch {
	case r.Resource.Group == "" && r.Resource.Resource == "nodes":
		return fmt.Sprintf("ask for a ClusterRole that grants %s on nodes, bound cluster-wide (the built-in view role does not)", r.Verb)
	case builtinView[r.Resource] || (role == "edit" && builtinEdit[r.Resource]):
		return fmt.Sprintf("ask for the built-in %s role %s", role, r.binding())
	case workmapResources[r.Resource]:
		return fmt.Sprintf("ask for the built-in %s role %s, which includes %s once workmap's aggregated ClusterRole workmap-%s is installed (deploy/ or the Helm chart)", role, r.binding(), r.Resource, role)
	}
	return fmt.Sprintf("ask for a role that grants %s on %s %s: the built-in %s role does once its operator installs aggregated rules for it, or else the operator's own role", r.Verb, r.Resource, r.binding(), role)
}

// binding is where the role must be bound for the request.
func (r *Refused) binding() string {
	switch {
	case r.Namespace != "":
		return "in namespace " + r.Namespace
	case clusterScoped[r.Resource]:
		return "bound cluster-wide (a ClusterRoleBinding: a RoleBinding grants nothing cluster-scoped)"
	}
	return "bound cluster-wide (a ClusterRoleBinding), or use -n NAMESPACE"
}

// Of is err as a refusal of verb on the resource in namespace ns when the API server
// refused it (Forbidden); any other error (nil too) is returned as it is.
func Of(err error, verb string, resource schema.GroupResource, ns string) error {
	if err == nil || !apierrors.IsForbidden(err) {
		return err
	}
	var r *Refused
	if errors.As(err, &r) {
		return err
	}
	return New(verb, resource, ns, err)
}

// The API server's reason of a refusal: `User "u" cannot get resource "jobsets" in API group
// "jobset.x-k8s.io" in the namespace "ml"` (or `at the cluster scope`).
var refusal = regexp.MustCompile(`cannot (\S+) resource "([^"]*)" in API group "([^"]*)"(?: in the namespace "([^"]*)")?`)

// Explain turns a Forbidden error of the API server into a Refused read from its message (the
// verb, resource and namespace the server names); any other error is returned as it is, and
// so is a Forbidden whose message does not name them.
func Explain(err error) error {
	if err == nil || !apierrors.IsForbidden(err) {
		return err
	}
	var r *Refused
	if errors.As(err, &r) {
		return err
	}
	m := refusal.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	resource, _, _ := strings.Cut(m[2], "/") // a subresource is granted with its resource's role
	return New(m[1], schema.GroupResource{Group: m[3], Resource: resource}, m[4], err)
}

var (
	readVerbs  = map[string]bool{"get": true, "list": true, "watch": true}
	writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}
)

// clusterScoped are the cluster-scoped resources workmap reads.
var clusterScoped = map[schema.GroupResource]bool{
	{Resource: "nodes"}:      true,
	{Resource: "namespaces"}: true,
	{Group: "workmap.dev", Resource: "workloaddefinitions"}:                true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

// workmapResources are those workmap installs, with aggregated view and edit rules.
var workmapResources = map[schema.GroupResource]bool{
	{Group: "workmap.dev", Resource: "workloaddefinitions"}: true,
	{Group: "scheduling.x-k8s.io", Resource: "podgroups"}:   true,
}

// builtinView are the resources workmap reads that Kubernetes' view role grants reading (in
// its namespace; namespaces only the one it is bound in).
var builtinView = map[schema.GroupResource]bool{
	{Resource: "pods"}:                                             true,
	{Resource: "events"}:                                           true,
	{Resource: "namespaces"}:                                       true,
	{Resource: "replicationcontrollers"}:                           true,
	{Resource: "services"}:                                         true,
	{Resource: "configmaps"}:                                       true,
	{Resource: "persistentvolumeclaims"}:                           true,
	{Group: "events.k8s.io", Resource: "events"}:                   true,
	{Group: "apps", Resource: "deployments"}:                       true,
	{Group: "apps", Resource: "replicasets"}:                       true,
	{Group: "apps", Resource: "statefulsets"}:                      true,
	{Group: "apps", Resource: "daemonsets"}:                        true,
	{Group: "apps", Resource: "controllerrevisions"}:               true,
	{Group: "batch", Resource: "jobs"}:                             true,
	{Group: "batch", Resource: "cronjobs"}:                         true,
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}:   true,
	{Group: "policy", Resource: "poddisruptionbudgets"}:            true,
	{Group: "resource.k8s.io", Resource: "resourceclaims"}:         true,
	{Group: "resource.k8s.io", Resource: "resourceclaimtemplates"}: true,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:        true,
	{Group: "networking.k8s.io", Resource: "ingresses"}:            true,
	{Group: "scheduling.k8s.io", Resource: "podgroups"}:            true,
	{Group: "scheduling.k8s.io", Resource: "workloads"}:            true,
}

// builtinEdit are the resources of builtinView that Kubernetes' edit role grants writing.
var builtinEdit = map[schema.GroupResource]bool{
	{Resource: "pods"}:                                           true,
	{Resource: "replicationcontrollers"}:                         true,
	{Resource: "services"}:                                       true,
	{Resource: "configmaps"}:                                     true,
	{Resource: "persistentvolumeclaims"}:                         true,
	{Group: "apps", Resource: "deployments"}:                     true,
	{Group: "apps", Resource: "replicasets"}:                     true,
	{Group: "apps", Resource: "statefulsets"}:                    true,
	{Group: "apps", Resource: "daemonsets"}:                      true,
	{Group: "batch", Resource: "jobs"}:                           true,
	{Group: "batch", Resource: "cronjobs"}:                       true,
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}: true,
	{Group: "policy", Resource: "poddisruptionbudgets"}:          true,
	{Group: "networking.k8s.io", Resource: "ingresses"}:          true,
}

// Kinds is the line for a verb refused on every one of several resources (the workload kinds
// `get` lists): `cannot list any workload kind in any namespace: forbidden (a, b); ask for …`.
// The role to ask for is the built-in view role for the kinds it grants (Jobs, pods), and for
// the others the role their operators aggregate into it, or their own.
func Kinds(verb string, resources []schema.GroupResource, ns string) string {
	if len(resources) == 1 {
		return New(verb, resources[0], ns, nil).Message()
	}
	names := make([]string, len(resources))
	var builtin, others []string
	for i, r := range resources {
		names[i] = r.String()
		if readVerbs[verb] && builtinView[r] {
			builtin = append(builtin, r.String())
		} else {
			others = append(others, r.String())
		}
	}
	r := &Refused{Verb: verb, Namespace: ns}
	refused := fmt.Sprintf("cannot %s any workload kind %s: forbidden (%s)", verb, r.Where(), strings.Join(names, ", "))
	switch {
	case len(builtin) == 0:
		return fmt.Sprintf("%s; ask for a role that grants %s on them %s: the built-in view role does once their operators install aggregated rules for them, or else the operators' own roles",
			refused, verb, r.binding())
	case len(others) == 0:
		return fmt.Sprintf("%s; ask for the built-in view role %s", refused, r.binding())
	}
	operators := "its operator installs aggregated rules for it (else ask for the operator's own role)"
	if len(others) > 1 {
		operators = "their operators install aggregated rules for them (else ask for the operators' own roles)"
	}
	return fmt.Sprintf("%s; ask for the built-in view role %s: it grants %s, and %s once %s",
		refused, r.binding(), andList(builtin), andList(others), operators)
}

// andList joins names as a sentence does: `a`, `a and b`, `a, b and c`.
func andList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
