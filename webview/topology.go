package webview

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
)

// hostnameLabel is the node label of a level whose domains are single nodes: the page draws
// nodes anyway, so such a level is not drawn as domains.
const hostnameLabel = "kubernetes.io/hostname"

// The GPU slots of a node are drawn as cells of slotSize pixels, slotGap apart, at most
// slotsPerRow to a row.
const (
	slotSize    = 18
	slotGap     = 4
	slotsPerRow = 8
)

// otherFill colours the GPUs held by pods of no workload.
const otherFill = "#8a94a3"

// topologyView is what the topology page shows.
type topologyView struct {
	Snap *Snapshot
	// Levels are the levels drawn, broad to narrow (a hostname level is left out).
	Levels []TopologyLevel
	// Root holds the domains of the broadest level, or the nodes when no level is drawn.
	Root     *domainView
	Capacity capacity
	// Legend has one entry per workload holding GPUs on a node drawn (pods of no workload
	// last); Waiting the gangs whose pods wait for the scheduler.
	Legend  []legendItem
	Waiting []waitingGang
	// WithoutGPUs counts the nodes not drawn: they have no GPU and no pod holds one on them.
	WithoutGPUs int
}

// domainView is one domain of a level: its subdomains, or its nodes at the narrowest level.
type domainView struct {
	Level TopologyLevel
	// Value is the level's label value ("" for the nodes that have none).
	Value    string
	Children []*domainView
	Nodes    []*nodeView
	// GPUs, Used and Free add up its nodes' (capacity unknown counts none).
	GPUs, Used, Free float64
	NodeCount        int
}

// Title names the domain: "rack r1", or "no rack" for the nodes without the label.
func (d *domainView) Title() string {
	if d.Value == "" {
		return "no " + d.Level.Name
	}
	return d.Level.Name + " " + d.Value
}

// nodeView is one node with its GPU slots.
type nodeView struct {
	Node
	// Known says its capacity is known (the nodes could be read).
	Known bool
	// Used are the GPUs its pods hold; Free what is left of its GPUs.
	Used, Free float64
	// Cells are its GPU slots; Holds what each workload holding some (pods of no workload
	// last) fills of them. Width and Height size the drawing.
	Cells         []cell
	Holds         []hold
	Width, Height int
}

// cell is one GPU slot of a node (Over: beyond its capacity, or its capacity is unknown).
type cell struct {
	X, Y int
	Over bool
}

// hold is the GPUs one workload holds on a node.
type hold struct {
	// Workload is the workload's key (group/kind/namespace/name; "" for pods of no
	// workload), Href its page, Title what its slots say on hover.
	Workload, Href, Title string
	Colour                string
	// Fills are the parts of slots it fills: whole slots, or part of one for a fraction.
	Fills []fill
}

// fill is the part of a slot a workload holds.
type fill struct{ X, Y, W int }

// legendItem is one workload holding GPUs on the nodes drawn.
type legendItem struct {
	Key    Key
	Entry  *Entry // nil for the pods of no workload
	Colour string
	GPUs   float64
	Nodes  int
	// Domains are where its gangs were placed ("rack r1", from their PodGroups).
	Domains []string
}

// waitingGang is a gang whose pods wait for the scheduler, and what it asks for.
type waitingGang struct {
	Entry  *Entry
	Gang   Gang
	Colour string
	// Asks says where its pods must go: "one rack", "packed by hostname", "any nodes".
	Asks string
}

// newTopologyView draws the cluster's nodes in their domains, each with its GPU slots filled by
// the workloads holding them, and lists the gangs that wait.
func newTopologyView(snap *Snapshot, levels []TopologyLevel) *topologyView {
	v := &topologyView{Snap: snap, Capacity: clusterCapacity(snap)}
	for _, l := range levels {
		if l.NodeLabel != hostnameLabel {
			v.Levels = append(v.Levels, l)
		}
	}

	// Who holds GPUs on which node.
	type holder struct {
		key   string
		entry *Entry
		gpus  float64
		pods  []string
	}
	onNode := map[string][]*holder{}
	add := func(node, key string, e *Entry, p PodUse) {
		for _, h := range onNode[node] {
			if h.key == key {
				h.gpus += p.GPUs
				h.pods = append(h.pods, p.Namespace+"/"+p.Name)
				return
			}
		}
		onNode[node] = append(onNode[node], &holder{key: key, entry: e, gpus: p.GPUs, pods: []string{p.Namespace + "/" + p.Name}})
	}
	for _, e := range snap.Entries {
		for _, p := range e.PodUses {
			if p.Bound() && p.GPUs > 0 {
				add(p.Node, workloadKey(e.Key), e, p)
			}
		}
	}
	for _, p := range snap.OtherPods {
		if p.Bound() && p.GPUs > 0 {
			add(p.Node, "", nil, p)
		}
	}

	// The nodes: those listed, with GPUs or holding some; else those pods are bound to.
	var nodes []*nodeView
	if v.Capacity.Known {
		for _, n := range snap.Nodes {
			if n.GPUs == 0 && len(onNode[n.Name]) == 0 {
				v.WithoutGPUs++
				continue
			}
			nodes = append(nodes, &nodeView{Node: n, Known: true})
		}
	} else {
		v.Levels = nil // the nodes' labels are unknown too
		for name := range onNode {
			nodes = append(nodes, &nodeView{Node: Node{Name: name, Ready: true}})
		}
	}
	slices.SortFunc(nodes, func(a, b *nodeView) int { return naturalCompare(a.Name, b.Name) })

	legend := map[string]*legendItem{}
	for _, n := range nodes {
		holders := onNode[n.Name]
		slices.SortStableFunc(holders, func(a, b *holder) int {
			return cmp.Or(boolCompare(a.key == "", b.key == ""), cmp.Compare(a.key, b.key)) // pods of no workload last
		})
		for _, h := range holders {
			n.Used += h.gpus
		}
		if n.Known {
			n.Free = max(n.GPUs-n.Used, 0)
		}
		slots := int(math.Ceil(max(n.GPUs, n.Used)))
		if !n.Known {
			slots = int(math.Ceil(n.Used))
		}
		perRow := min(max(slots, 1), slotsPerRow)
		rows := max((slots+perRow-1)/perRow, 1)
		n.Width, n.Height = perRow*(slotSize+slotGap)-slotGap, rows*(slotSize+slotGap)-slotGap
		at := func(i int) (int, int) {
			return (i % perRow) * (slotSize + slotGap), (i / perRow) * (slotSize + slotGap)
		}
		for i := range slots {
			x, y := at(i)
			n.Cells = append(n.Cells, cell{X: x, Y: y, Over: !n.Known || float64(i) >= n.GPUs})
		}
		start := 0.0
		for _, h := range holders {
			held := hold{Workload: h.key, Colour: otherFill, Title: fmt.Sprintf("pods of no workload: %s GPU%s on %s (%s)", number(h.gpus), plural(h.gpus), n.Name, strings.Join(h.pods, ", "))}
			if h.entry != nil {
				held.Colour, held.Href = workloadColour(h.key), h.entry.Key.Path()
				held.Title = fmt.Sprintf("%s %s/%s: %s GPU%s on %s (%s)", h.entry.Key.Kind, h.entry.Key.Namespace, h.entry.Key.Name, number(h.gpus), plural(h.gpus), n.Name, strings.Join(h.pods, ", "))
			}
			end := start + h.gpus
			for i := int(start); float64(i) < end && i < slots; i++ {
				from, to := max(start, float64(i)), min(end, float64(i+1))
				x, y := at(i)
				held.Fills = append(held.Fills, fill{X: x + int(math.Round((from-float64(i))*slotSize)), Y: y, W: int(math.Round((to - from) * slotSize))})
			}
			n.Holds = append(n.Holds, held)
			start = end
			item := legend[h.key]
			if item == nil {
				item = &legendItem{Entry: h.entry, Colour: held.Colour}
				if h.entry != nil {
					item.Key = h.entry.Key
					for _, g := range h.entry.Gangs {
						if d := domainText(g.Domain, levels); d != "" && !slices.Contains(item.Domains, d) {
							item.Domains = append(item.Domains, d)
						}
					}
				}
				legend[h.key] = item
			}
			item.GPUs += h.gpus
			item.Nodes++
		}
	}
	for _, item := range legend {
		v.Legend = append(v.Legend, *item)
	}
	slices.SortFunc(v.Legend, func(a, b legendItem) int {
		return cmp.Or(boolCompare(a.Entry == nil, b.Entry == nil), cmp.Compare(workloadKey(a.Key), workloadKey(b.Key)))
	})
	v.Root = &domainView{}
	placeNodes(v.Root, v.Levels, nodes)

	for _, e := range snap.Entries {
		for _, g := range e.Gangs {
			if g.Waiting() {
				v.Waiting = append(v.Waiting, waitingGang{Entry: e, Gang: g, Colour: workloadColour(workloadKey(e.Key)), Asks: asks(g, levels)})
			}
		}
	}
	return v
}

// placeNodes puts nodes in domains of the levels, broad to narrow (domains by label value,
// naturally sorted; the nodes without the label last), and adds up each domain's GPUs.
func placeNodes(d *domainView, levels []TopologyLevel, nodes []*nodeView) {
	if len(levels) == 0 {
		d.Nodes = nodes
	} else {
		l := levels[0]
		byValue := map[string][]*nodeView{}
		var values []string
		for _, n := range nodes {
			value := n.Labels[l.NodeLabel]
			if _, ok := byValue[value]; !ok {
				values = append(values, value)
			}
			byValue[value] = append(byValue[value], n)
		}
		slices.SortFunc(values, func(a, b string) int {
			return cmp.Or(boolCompare(a == "", b == ""), naturalCompare(a, b))
		})
		for _, value := range values {
			child := &domainView{Level: l, Value: value}
			placeNodes(child, levels[1:], byValue[value])
			d.Children = append(d.Children, child)
		}
	}
	for _, c := range d.Children {
		d.GPUs, d.Used, d.Free, d.NodeCount = d.GPUs+c.GPUs, d.Used+c.Used, d.Free+c.Free, d.NodeCount+c.NodeCount
	}
	for _, n := range d.Nodes {
		d.GPUs, d.Used, d.Free, d.NodeCount = d.GPUs+n.GPUs, d.Used+n.Used, d.Free+n.Free, d.NodeCount+1
	}
}

// asks says where a gang's pods must or should go.
func asks(g Gang, levels []TopologyLevel) string {
	name := func(level string) string {
		for _, l := range levels {
			if l.Name == level || l.NodeLabel == level {
				return l.Name
			}
		}
		return level
	}
	var parts []string
	if g.Required != "" {
		parts = append(parts, "one "+name(g.Required))
	}
	if g.Preferred != "" {
		parts = append(parts, "packed by "+name(g.Preferred))
	}
	if len(parts) == 0 {
		return "any nodes"
	}
	return strings.Join(parts, ", ")
}

// domainText names where a gang was placed (its PodGroup's label=value) by its level's name
// when the level is known: "rack r1".
func domainText(domain string, levels []TopologyLevel) string {
	label, value, ok := strings.Cut(domain, "=")
	if !ok {
		return domain
	}
	for _, l := range levels {
		if l.NodeLabel == label {
			return l.Name + " " + value
		}
	}
	return domain
}

// workloadKey names a workload in the page's data attributes: group/kind/namespace/name.
func workloadKey(k Key) string { return k.Group + "/" + k.Kind + "/" + k.Namespace + "/" + k.Name }

// workloadColour is a workload's colour: from a hash of its key, so the same on every load and
// every page; 36 hues at two lightnesses.
func workloadColour(key string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	sum := h.Sum32()
	hue := (sum % 36) * 10
	lightness := 42
	if (sum/36)%2 == 1 {
		lightness = 58
	}
	return fmt.Sprintf("hsl(%d, 62%%, %d%%)", hue, lightness)
}

// boolCompare orders false before true.
func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func plural(n float64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// naturalCompare orders names with their numbers by value: node-2 before node-10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			na, ra := leadingDigits(a)
			nb, rb := leadingDigits(b)
			ta, tb := strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if c := cmp.Or(cmp.Compare(len(ta), len(tb)), cmp.Compare(ta, tb)); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingDigits(s string) (string, string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}
