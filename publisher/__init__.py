"""The publisher side of volume-quota: measure this broker's log volumes and publish them."""
