package hcloudmock

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// action is an action of the API: running for Config.ActionPolls reads and at least
// Config.ActionDuration, then "success", or "error" when a Fault made it fail.
type action struct {
	schema.Action
	polls    int           // reads left that answer "running"
	duration time.Duration // how long it runs at least
	fail     *apiError     // the error it ends with, if any
}

// startAction records an action on resources. When the request carries an InAction
// fault the action takes it and fails: the caller must then leave its change unmade.
func (s *Server) startAction(command string, resources ...schema.ActionResourceReference) (*action, bool) {
	a := &action{
		Action:   schema.Action{ID: s.id(), Command: command, Started: s.cfg.Clock.Now(), Resources: resources},
		polls:    s.cfg.ActionPolls,
		duration: s.cfg.ActionDuration,
	}
	if f := s.actionFault; f != nil {
		a.fail = errorf(f.Code, "%s", cmp.Or(f.Message, f.Code))
		s.actionFault = nil
	}
	s.actions[a.ID] = a
	return a, a.fail != nil
}

func (a *action) running(now time.Time) bool {
	return a.polls > 0 || now.Sub(a.Started) < a.duration
}

// view is the action as the API shows it now, without counting as a read.
func (a *action) view(now time.Time) schema.Action {
	v := a.Action
	v.Resources = slices.Clone(a.Resources)
	switch {
	case a.running(now):
		v.Status = "running"
	case a.fail != nil:
		v.Status, v.Progress, v.Error = "error", 100, a.fail.actionError()
	default:
		v.Status, v.Progress = "success", 100
	}
	if v.Status != "running" {
		if a.Finished == nil {
			a.Finished = &now
		}
		v.Finished = a.Finished
	}
	return v
}

// read is the action as a read of it answers: each read of a running action is one of
// its polls.
func (a *action) read(now time.Time) schema.Action {
	v := a.view(now)
	if a.polls > 0 {
		a.polls--
	}
	return v
}

// locked is the API's locked error when an action on the resource is still running.
func (s *Server) locked(typ string, id int64) *apiError {
	now := s.cfg.Clock.Now()
	for _, aid := range sortedKeys(s.actions) {
		a := s.actions[aid]
		if a.running(now) && slices.Contains(a.Resources, schema.ActionResourceReference{ID: id, Type: typ}) {
			return errorf(codeLocked, "%s %d is locked by running action %d (%s)", typ, id, a.ID, a.Command)
		}
	}
	return nil
}

// actionAnswer is the answer of a request that started a: {"action": ...}, 201.
func (s *Server) actionAnswer(a *action) (int, any, *apiError) {
	return http.StatusCreated, schema.ActionGetResponse{Action: a.view(s.cfg.Clock.Now())}, nil
}

// getAction answers GET /actions/{id}, and GET /<typ>/actions/{id} when typ is set: an
// action of that kind of resource only.
func (s *Server) getAction(typ string) handler {
	return func(r *http.Request) (int, any, *apiError) {
		id, err := pathID(r, "action")
		if err != nil {
			return 0, nil, err
		}
		a, ok := s.actions[id]
		if ok && typ != "" {
			ok = slices.ContainsFunc(a.Resources, func(ref schema.ActionResourceReference) bool { return ref.Type == typ })
		}
		if !ok {
			return 0, nil, notFound("action", id)
		}
		return http.StatusOK, schema.ActionGetResponse{Action: a.read(s.cfg.Clock.Now())}, nil
	}
}

// listActions answers GET /actions: the actions of the id parameters (required, as the
// API requires them), filtered by status.
func (s *Server) listActions(r *http.Request) (int, any, *apiError) {
	q := r.URL.Query()
	if len(q["id"]) == 0 {
		return 0, nil, invalidField("id", "at least one action ID is required")
	}
	now := s.cfg.Clock.Now()
	var out []schema.Action
	for _, v := range q["id"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, nil, invalidField("id", "not an action ID: %q", v)
		}
		if a, ok := s.actions[id]; ok {
			if st := a.read(now); len(q["status"]) == 0 || slices.Contains(q["status"], st.Status) {
				out = append(out, st)
			}
		}
	}
	slices.SortFunc(out, func(a, b schema.Action) int { return cmp.Compare(a.ID, b.ID) })
	return list(r, "actions", out, sortKeys[schema.Action]{
		"id":      byID(func(a schema.Action) int64 { return a.ID }),
		"command": byName(func(a schema.Action) string { return a.Command }),
		"status":  byName(func(a schema.Action) string { return a.Status }),
		"started": func(a, b schema.Action) int { return a.Started.Compare(b.Started) },
	})
}
