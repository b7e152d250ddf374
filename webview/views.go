package webview

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// overviewQuery is the overview's filters and sort order, from the URL.
type overviewQuery struct {
	Namespace, Kind, Status string
	Sort                    string
	Desc                    bool
}

func parseOverviewQuery(q url.Values) overviewQuery {
	o := overviewQuery{Namespace: q.Get("namespace"), Kind: q.Get("kind"), Status: q.Get("status"), Sort: q.Get("sort"), Desc: q.Get("order") == "desc"}
	if _, ok := columnOrder[o.Sort]; !ok {
		o.Sort = ""
	}
	return o
}

// values encodes the query, as links and the event stream carry it.
func (o overviewQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"namespace": o.Namespace, "kind": o.Kind, "status": o.Status, "sort": o.Sort} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if o.Desc {
		v.Set("order", "desc")
	}
	return v
}

// columns of the overview, by sort key.
var columns = []struct{ Key, Title string }{
	{"kind", "Kind"}, {"name", "Name"}, {"namespace", "Namespace"}, {"status", "Status"},
	{"pods", "Pods ready"}, {"gpus", "GPUs"}, {"resources", "Other resources"}, {"gang", "Gang"}, {"age", "Age"},
}

var columnOrder = func() map[string]func(a, b *Entry) int {
	byName := func(a, b *Entry) int { return cmp.Compare(a.Key.Name, b.Key.Name) }
	return map[string]func(a, b *Entry) int{
		"kind":      func(a, b *Entry) int { return cmp.Compare(a.Key.Kind, b.Key.Kind) },
		"name":      byName,
		"namespace": func(a, b *Entry) int { return cmp.Compare(a.Key.Namespace, b.Key.Namespace) },
		"status":    func(a, b *Entry) int { return cmp.Compare(a.State(), b.State()) },
		"pods": func(a, b *Entry) int {
			ra, ea := a.Pods()
			rb, eb := b.Pods()
			return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(ea, eb))
		},
		"gpus":      func(a, b *Entry) int { return cmp.Compare(a.GPUs(), b.GPUs()) },
		"resources": func(a, b *Entry) int { return cmp.Compare(resourcesText(a.Extended), resourcesText(b.Extended)) },
		"gang":      func(a, b *Entry) int { return cmp.Compare(gangText(a.Gangs), gangText(b.Gangs)) },
		"age":       func(a, b *Entry) int { return b.Created.Compare(a.Created) }, // youngest first
	}
}()

// column is one header of the overview table: its link sorts by it.
type column struct {
	Title, Href string
	// Sorted is "asc" or "desc" when the table is sorted by this column.
	Sorted string
}

// row is one workload of the overview.
type row struct {
	Entry          *Entry
	Ready          int
	Expected       int64
	Resources      string
	Gang, GangNote string
	// GangWhy is why a gang waits, as the scheduler says it ("" when none waits).
	GangWhy string
}

// total is the GPUs of the workloads of one namespace: those their pods bound to a node
// hold, and those their pods not bound yet ask for.
type total struct {
	Namespace      string
	Workloads      int
	Bound, Waiting float64
}

// capacity is the cluster's GPUs, from its nodes.
type capacity struct {
	// Known says the nodes could be read; Why says why not.
	Known bool
	Why   string
	// Nodes counts the nodes with GPUs; GPUs are their allocatable GPUs.
	Nodes int
	GPUs  float64
	// Bound are the GPUs of every pod bound to a node and not finished (the workloads' and
	// any other's); Free is GPUs − Bound.
	Bound, Free float64
	// Partial says the view sees the pods of one namespace only: Free is then at most that.
	Partial bool
}

// clusterCapacity adds up the nodes' GPUs and those every pod the view sees holds.
func clusterCapacity(snap *Snapshot) capacity {
	c := capacity{Partial: snap.Namespace != ""}
	for _, e := range snap.Entries {
		c.Bound += e.BoundGPUs()
	}
	c.Bound += sumGPUs(snap.OtherPods, PodUse.Bound)
	switch snap.NodeAccess {
	case AccessWatching:
		c.Known = true
	case AccessSyncing:
		c.Why = "reading the nodes"
	case AccessNotPermitted:
		c.Why = "not permitted to list nodes: " + snap.NodeMessage
	case AccessNotInstalled:
		c.Why = "nodes are not served"
	default:
		c.Why = "nodes not read yet"
	}
	if !c.Known {
		return c
	}
	for _, n := range snap.Nodes {
		if n.GPUs > 0 {
			c.Nodes++
			c.GPUs += n.GPUs
		}
	}
	c.Free = max(c.GPUs-c.Bound, 0)
	return c
}

// overviewView is what the overview shows.
type overviewView struct {
	Snap                      *Snapshot
	Query                     overviewQuery
	Columns                   []column
	Rows                      []row
	Namespaces, Kinds, States []string
	// Totals are the GPUs of the workloads shown, per namespace; Bound and Waiting their
	// sums; OtherBound the GPUs of pods of no workload (shown when nothing is filtered out).
	Totals         []total
	Bound, Waiting float64
	OtherBound     float64
	Workloads      int
	Capacity       capacity
}

// Filtered says a filter hides some workloads.
func (o overviewQuery) Filtered() bool { return o.Namespace != "" || o.Kind != "" || o.Status != "" }

func newOverviewView(snap *Snapshot, q overviewQuery) *overviewView {
	v := &overviewView{Snap: snap, Query: q}
	namespaces, kinds, states := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var shown []*Entry
	for _, e := range snap.Entries {
		namespaces[e.Key.Namespace], kinds[e.Key.Kind], states[e.State()] = true, true, true
		if (q.Namespace == "" || e.Key.Namespace == q.Namespace) && (q.Kind == "" || e.Key.Kind == q.Kind) && (q.Status == "" || e.State() == q.Status) {
			shown = append(shown, e)
		}
	}
	for _, k := range snap.Kinds {
		if k.Access == AccessWatching || k.Access == AccessSyncing {
			kinds[k.Kind] = true
		}
	}
	v.Namespaces, v.Kinds, v.States = sortedKeys(namespaces), sortedKeys(kinds), sortedKeys(states)
	if order := columnOrder[q.Sort]; order != nil {
		slices.SortStableFunc(shown, func(a, b *Entry) int {
			if q.Desc {
				return order(b, a)
			}
			return order(a, b)
		})
	}
	byNS := map[string]*total{}
	for _, e := range shown {
		ready, expected := e.Pods()
		v.Rows = append(v.Rows, row{Entry: e, Ready: ready, Expected: expected, Resources: resourcesText(e.Extended), Gang: gangText(e.Gangs), GangNote: gangNote(e.Gangs), GangWhy: gangWhy(e.Gangs)})
		t := byNS[e.Key.Namespace]
		if t == nil {
			t = &total{Namespace: e.Key.Namespace}
			byNS[e.Key.Namespace] = t
		}
		t.Workloads++
		bound, waiting := e.BoundGPUs(), e.WaitingGPUs()
		t.Bound += bound
		t.Waiting += waiting
		v.Bound += bound
		v.Waiting += waiting
	}
	if !q.Filtered() {
		v.OtherBound = sumGPUs(snap.OtherPods, PodUse.Bound)
		v.Bound += v.OtherBound
	}
	v.Capacity = clusterCapacity(snap)
	v.Workloads = len(shown)
	for _, t := range byNS {
		v.Totals = append(v.Totals, *t)
	}
	sort.Slice(v.Totals, func(i, j int) bool { return v.Totals[i].Namespace < v.Totals[j].Namespace })
	for _, c := range columns {
		next := q
		next.Sort, next.Desc = c.Key, false
		col := column{Title: c.Title}
		if q.Sort == c.Key {
			col.Sorted = "asc"
			if q.Desc {
				col.Sorted = "desc"
			}
			next.Desc = !q.Desc
		}
		col.Href = "?" + next.values().Encode()
		v.Columns = append(v.Columns, col)
	}
	return v
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// gangText summarizes the gangs' PodGroups: "Running 3/3" (phase, scheduled/minMember), or
// how a gang ended ("Completed") once its workload did.
func gangText(gangs []Gang) string {
	if len(gangs) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(gangs))
	for _, g := range gangs {
		switch {
		case g.Done != "":
			parts = append(parts, g.Done)
		case g.Found:
			parts = append(parts, fmt.Sprintf("%s %d/%d", g.Phase, g.Scheduled, g.MinMember))
		default:
			parts = append(parts, fmt.Sprintf("no PodGroup 0/%d", g.MinMember))
		}
	}
	return strings.Join(parts, ", ")
}

// gangWhy is why the first gang that waits does: the first reason its pods give.
func gangWhy(gangs []Gang) string {
	for _, g := range gangs {
		if g.Waiting() && len(g.Reasons) > 0 {
			return g.Reasons[0]
		}
	}
	return ""
}

// gangNote explains the gang column (shown as its title).
func gangNote(gangs []Gang) string {
	var parts []string
	for _, g := range gangs {
		s := fmt.Sprintf("gang %s: PodGroup %s, minMember %d", g.Name, g.PodGroup, g.MinMember)
		if g.Done != "" && g.Found {
			s += fmt.Sprintf(", phase %s %d/%d", g.Phase, g.Scheduled, g.MinMember)
		}
		if g.Note != "" {
			s += " (" + g.Note + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func resourcesText(rs []Resource) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.Name+" "+number(r.Value))
	}
	return strings.Join(parts, ", ")
}

// workloadView is what a workload's page shows.
type workloadView struct {
	Snap  *Snapshot
	Key   Key
	Entry *Entry // nil when not found
	// Missing says why there is no entry (not found, kind not watched).
	Missing string
	// Events are the newest events of the workload and of its pods, as the page was loaded;
	// EventsNote says why none are shown when events are not watched.
	Events     []event
	EventsNote string
}

func newWorkloadView(snap *Snapshot, k Key) *workloadView {
	v := &workloadView{Snap: snap, Key: k}
	if e, ok := snap.Lookup(k); ok {
		v.Entry = e
		return v
	}
	v.Missing = missingText(snap, k)
	return v
}

func missingText(snap *Snapshot, k Key) string {
	kind := k.Kind
	if k.Group != "" {
		kind += "." + k.Group
	}
	for _, ks := range snap.Kinds {
		if ks.Group != k.Group || ks.Kind != k.Kind {
			continue
		}
		switch ks.Access {
		case AccessNotPermitted:
			return fmt.Sprintf("%s is not permitted: %s", kind, ks.Message)
		case AccessNotInstalled:
			return fmt.Sprintf("%s is not installed in the cluster", kind)
		}
		if snap.Namespace != "" && k.Namespace != snap.Namespace {
			return fmt.Sprintf("this view shows namespace %q only", snap.Namespace)
		}
		return fmt.Sprintf("%s %s/%s not found", k.Kind, k.Namespace, k.Name)
	}
	if snap.Syncing {
		return "loading: the caches are not synced yet"
	}
	return fmt.Sprintf("unknown workload kind %s: no definition for it (see `workmap catalog list`, or pass --definitions)", kind)
}

// podPhases renders counts by phase, sorted: "1 Running, 2 Succeeded".
func podPhases(phases map[string]int) string {
	keys := make([]string, 0, len(phases))
	for k := range phases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", phases[k], k))
	}
	return strings.Join(parts, ", ")
}

// age renders a duration like kubectl: 5s, 3m, 2h, 4d.
func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
