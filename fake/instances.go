package fake

import (
	"context"
	"fmt"

	"github.com/ccmkit/ccmkit/cloudapi"
)

type instanceAPI struct{ c *Cloud }

// GetInstance returns a copy of the instance, or ErrNotFound.
func (a instanceAPI) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	c := a.c
	leave, err := c.begin(ctx, cloudapi.OpGetInstance, id)
	if err != nil {
		return nil, err
	}
	defer leave()
	c.mu.RLock()
	inst, ok := c.instances.get(id)
	c.mu.RUnlock()
	if !ok {
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, id, nil)
	}
	out := inst.Clone()
	return &out, nil
}

// ListInstances returns a page of copies of the instances that carry opts.Tags.
func (a instanceAPI) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	c := a.c
	leave, err := c.begin(ctx, cloudapi.OpListInstances, "")
	if err != nil {
		return nil, err
	}
	defer leave()
	c.mu.RLock()
	items, next, err := c.instances.page(opts.PageToken, c.pageSize(opts.PageSize), func(i cloudapi.Instance) bool {
		return cloudapi.MatchTags(i.Tags, opts.Tags)
	})
	c.mu.RUnlock()
	if err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpListInstances, "", err)
	}
	for i := range items {
		items[i] = items[i].Clone()
	}
	return &cloudapi.InstancePage{Items: items, NextPageToken: next}, nil
}

// AddInstance adds an instance to the cloud, as if someone had started a virtual machine.
// An empty Region is the cloud's region and an empty State is running. It fails when the
// ID is taken or the instance is malformed.
func (c *Cloud) AddInstance(inst cloudapi.Instance) error {
	if inst.ID == "" {
		return fmt.Errorf("fake: add instance: %w: an instance needs an ID", cloudapi.ErrInvalidRequest)
	}
	if inst.State != "" && !inst.State.Valid() {
		return fmt.Errorf("fake: add instance %s: %w: state %q", inst.ID, cloudapi.ErrInvalidRequest, inst.State)
	}
	for _, a := range inst.Addresses {
		if err := validateAddress(a); err != nil {
			return fmt.Errorf("fake: add instance %s: %w: %w", inst.ID, cloudapi.ErrInvalidRequest, err)
		}
	}
	if inst.Region == "" {
		inst.Region = c.cfg.Region
	}
	if inst.State == "" {
		inst.State = cloudapi.InstanceRunning
	}
	return c.changeInstances(func() error {
		if _, ok := c.instances.get(inst.ID); ok {
			return fmt.Errorf("fake: add instance %s: %w: the ID is taken", inst.ID, cloudapi.ErrConflict)
		}
		c.instances.put(inst.ID, inst.Clone())
		return nil
	})
}

// SetInstanceState changes the state of an instance, as if it had been stopped, started
// or terminated. It fails with ErrNotFound for an unknown ID.
func (c *Cloud) SetInstanceState(id string, state cloudapi.InstanceState) error {
	if !state.Valid() {
		return fmt.Errorf("fake: set state of %s: %w: state %q", id, cloudapi.ErrInvalidRequest, state)
	}
	return c.updateInstance(id, func(i *cloudapi.Instance) { i.State = state })
}

// SetInstanceAddresses replaces the addresses of an instance. It fails with ErrNotFound
// for an unknown ID.
func (c *Cloud) SetInstanceAddresses(id string, addrs []cloudapi.Address) error {
	for _, a := range addrs {
		if err := validateAddress(a); err != nil {
			return fmt.Errorf("fake: set addresses of %s: %w: %w", id, cloudapi.ErrInvalidRequest, err)
		}
	}
	return c.updateInstance(id, func(i *cloudapi.Instance) { i.Addresses = append([]cloudapi.Address(nil), addrs...) })
}

func (c *Cloud) updateInstance(id string, change func(*cloudapi.Instance)) error {
	return c.changeInstances(func() error {
		inst, ok := c.instances.get(id)
		if !ok {
			return fmt.Errorf("fake: instance %s: %w", id, cloudapi.ErrNotFound)
		}
		inst = inst.Clone()
		change(&inst)
		c.instances.put(id, inst)
		return nil
	})
}

// changeInstances runs change under mu as one write: with a state file, on the file's
// latest state and saved before it returns (an error wrapping cloudapi.ErrTransient when
// saving fails; the change is then undone).
func (c *Cloud) changeInstances(change func() error) error {
	leave, err := c.enter(context.Background(), true)
	if err != nil {
		return fmt.Errorf("fake: %w: %w", cloudapi.ErrTransient, err)
	}
	defer leave()
	c.mu.Lock()
	err = change()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := c.save(); err != nil {
		return fmt.Errorf("fake: %w: %w", cloudapi.ErrTransient, err)
	}
	return nil
}

// DeleteInstance removes an instance, as a cloud does some time after it terminated:
// from then on the instance is not found. Routes to it become blackholes; load balancers
// keep it as a target. It fails with ErrNotFound for an unknown ID.
func (c *Cloud) DeleteInstance(id string) error {
	return c.changeInstances(func() error {
		if !c.instances.delete(id) {
			return fmt.Errorf("fake: delete instance %s: %w", id, cloudapi.ErrNotFound)
		}
		return nil
	})
}

// instanceKnown reports whether the cloud has an instance with this ID.
func (c *Cloud) instanceKnown(id string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.instances.get(id)
	return ok
}
