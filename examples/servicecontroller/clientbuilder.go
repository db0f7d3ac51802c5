package main

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// clientBuilder hands the provider the program's Kubernetes client, as the
// cloud-controller-manager hands it its own.
type clientBuilder struct{ kube kubernetes.Interface }

func (b clientBuilder) Config(string) (*rest.Config, error)         { return &rest.Config{}, nil }
func (b clientBuilder) ConfigOrDie(string) *rest.Config             { return &rest.Config{} }
func (b clientBuilder) Client(string) (kubernetes.Interface, error) { return b.kube, nil }
func (b clientBuilder) ClientOrDie(string) kubernetes.Interface     { return b.kube }
