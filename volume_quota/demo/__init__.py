"""`volume-quota demo`: a local cluster whose producers slow, pause and recover as a broker's
log dir fills with Kafka records and is freed again.

The story (:mod:`.story`), the limits (:mod:`.plan`), rates (:mod:`.rates`) and the screen
(:mod:`.screen`) are pure; :mod:`.runner` and :mod:`.loop` are the I/O shell around them.
"""
