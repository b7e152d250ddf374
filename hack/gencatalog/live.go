package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// liveOperator is the operator release a kind's live e2e test (e2e/operators/<test>) runs, its
// version read from the pin in hack/versions.mk (test: the packages holding those tests); or, for kinds whose operator cannot be built
// and run here, why not.
type liveOperator struct {
	operator, pin, test string
	notBuildable        string
}

// liveVerified says, per definition, what its live test runs against.
var liveVerified = map[string]liveOperator{
	"jobsets.jobset.x-k8s.io":                   {operator: "JobSet controller", pin: "JOBSET_VERSION", test: "e2e`, `plugin"},
	"leaderworkersets.leaderworkerset.x-k8s.io": {operator: "LWS", pin: "LWS_VERSION", test: "e2e/operators/lws"},
	"rayclusters.ray.io":                        {operator: "KubeRay", pin: "KUBERAY_VERSION", test: "e2e/operators/kuberay"},
	"rayjobs.ray.io":                            {operator: "KubeRay", pin: "KUBERAY_VERSION", test: "e2e/operators/kuberay"},
	"rayservices.ray.io":                        {operator: "KubeRay", pin: "KUBERAY_VERSION", test: "e2e/operators/kuberay"},
	"pytorchjobs.kubeflow.org":                  {operator: "Kubeflow training-operator", pin: "TRAINING_OPERATOR_VERSION", test: "e2e/operators/pytorchjob"},
	"mpijobs.kubeflow.org":                      {operator: "MPI operator", pin: "MPI_OPERATOR_VERSION", test: "e2e/operators/mpijob"},
	"inferenceservices.serving.kserve.io":       {operator: "KServe (Standard mode)", pin: "KSERVE_VERSION", test: "e2e/operators/kserve"},
	"milvuses.milvus.io":                        {operator: "Milvus operator", pin: "MILVUS_OPERATOR_VERSION", test: "e2e/operators/milvus"},
	"services.serving.knative.dev":              {notBuildable: "Knative Serving needs a networking layer (Kourier, Istio) that cannot be run here"},
	"nimservices.apps.nvidia.com":               {notBuildable: "the NIM operator's module is not served by the Go module proxy"},
	"podcliquesets.grove.io":                    {notBuildable: "the Grove operator's module is not served by the Go module proxy"},
	"dynamographdeployments.nvidia.com":         {notBuildable: "the Dynamo operator's module is not served by the Go module proxy"},
}

// readPins reads the `NAME := value` pins of hack/versions.mk.
func readPins(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pins := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":=")
		if ok && !strings.HasPrefix(strings.TrimSpace(name), "#") {
			pins[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
	}
	return pins, sc.Err()
}

// verifiedLive is the "verified live against" cell of a definition.
func verifiedLive(definition string, pins map[string]string) (string, error) {
	l, ok := liveVerified[definition]
	if !ok {
		return "", fmt.Errorf("definition %s: say in hack/gencatalog/live.go what its live test runs against", definition)
	}
	if l.notBuildable != "" {
		return "not verified live: " + l.notBuildable, nil
	}
	v, ok := pins[l.pin]
	if !ok {
		return "", fmt.Errorf("definition %s: no pin %s in hack/versions.mk", definition, l.pin)
	}
	return fmt.Sprintf("%s %s (`%s`)", l.operator, v, l.test), nil
}
