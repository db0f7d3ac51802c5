// Package nodelabels holds the rules for the labels ccmkit asks the cloud node controller
// to put on Nodes (the additional labels of the cloud config and the labels from instance
// tags), so that the provider's config validation and package instances check them alike:
// keys are qualified names (as k8s.io/apimachinery validates them) outside the
// kubernetes.io and k8s.io namespaces and their subdomains (node.kubernetes.io, ...), which
// Kubernetes reserves for itself and the upstream cloud node controller drops; values are
// valid label values; each label has one source.
package nodelabels
