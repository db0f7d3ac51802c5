package nodelabels

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeyProblems(t *testing.T) {
	tests := []struct {
		key  string
		want []string // each a substring of one problem, in order
	}{
		{key: "pool"},
		{key: "example.com/pool"},
		{key: "kubernetes.io.example.com/pool"}, // a domain of its own that merely starts with it
		{key: "notkubernetes.io/pool"},
		{key: "kubernetes.io/pool", want: []string{"it is under kubernetes.io, which Kubernetes reserves: use a prefix of your own"}},
		{key: "node.kubernetes.io/pool", want: []string{"it is under kubernetes.io"}},
		{key: "k8s.io/pool", want: []string{"it is under k8s.io"}},
		{key: "a.b.k8s.io/pool", want: []string{"it is under k8s.io"}},
		{key: "bad key!", want: []string{"name part must consist of alphanumeric characters"}},
		{key: "", want: []string{"name part must be non-empty", "name part must consist of alphanumeric characters"}},
		{key: "Example.com/pool", want: []string{"prefix part a lowercase RFC 1123 subdomain"}},
		{key: "node.kubernetes.io/bad key", want: []string{"name part must consist of alphanumeric characters", "it is under kubernetes.io"}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got := KeyProblems(tt.key)
			if assert.Len(t, got, len(tt.want), "%q", got) {
				for i, want := range tt.want {
					assert.Contains(t, got[i], want)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name       string
		additional map[string]string
		fromTags   map[string]string
		want       []Problem // Msg is a substring
	}{
		{name: "none"},
		{
			name:       "valid",
			additional: map[string]string{"example.com/pool": "a", "tier": ""},
			fromTags:   map[string]string{"team": "example.com/team", "cost-center": "example.com/cost-center"},
		},
		{
			name:       "additional labels",
			additional: map[string]string{"node.kubernetes.io/x": "a", "example.com/ok": "bad value!"},
			want: []Problem{
				{Msg: `value of "example.com/ok": a valid label must be an empty string or consist of alphanumeric characters`},
				{Msg: `key "node.kubernetes.io/x": it is under kubernetes.io`},
			},
		},
		{
			name:     "reserved and malformed label keys",
			fromTags: map[string]string{"zone": "topology.kubernetes.io/zone", "team": "Team!", "x": "k8s.io/x"},
			want: []Problem{
				{FromTags: true, Msg: `label key "Team!" of tag "team": name part must consist of alphanumeric characters`},
				{FromTags: true, Msg: `label key "k8s.io/x" of tag "x": it is under k8s.io`},
				{FromTags: true, Msg: `label key "topology.kubernetes.io/zone" of tag "zone": it is under kubernetes.io`},
			},
		},
		{
			name:     "empty tag key",
			fromTags: map[string]string{"": "example.com/x"},
			want:     []Problem{{FromTags: true, Msg: `an empty tag key (mapped to label "example.com/x")`}},
		},
		{
			name:     "two tags, one label",
			fromTags: map[string]string{"Team": "example.com/team", "team": "example.com/team", "owner": "example.com/team"},
			want: []Problem{
				{FromTags: true, Msg: `tags "Team" and "owner" both map to label "example.com/team"`},
				{FromTags: true, Msg: `tags "Team" and "team" both map to label "example.com/team"`},
			},
		},
		{
			name:       "a label from a tag and an additional label",
			additional: map[string]string{"example.com/pool": "a"},
			fromTags:   map[string]string{"pool": "example.com/pool"},
			want:       []Problem{{FromTags: true, Msg: `label "example.com/pool" of tag "pool" is an additional label too: set it in one place`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.additional, tt.fromTags)
			if assert.Len(t, got, len(tt.want), "%q", got) {
				for i, want := range tt.want {
					assert.Equal(t, want.FromTags, got[i].FromTags, got[i].Msg)
					assert.Contains(t, got[i].Msg, want.Msg)
				}
			}
		})
	}
}
