"""Communication: the message dispatcher (`dispatcher.py`), channel timing and loss models
(`channels.py`), message fates (`fates.py`), transceivers and base stations
(`transceiver.py`), and vectorised state beacons (`beacons.py`, compiled passes in
`beacon_kernels.py`, the bounded table's K nearest in `nearest_table.py`). Import from the
modules; this package defines nothing itself.
"""
