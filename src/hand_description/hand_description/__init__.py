"""hand_description: The tendon-driven robot hand."""
