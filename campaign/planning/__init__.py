"""Planning: a validated manifest checked against ops/ and the test tree, frozen into a task matrix."""
