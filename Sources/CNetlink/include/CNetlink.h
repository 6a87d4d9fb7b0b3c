#ifndef CNETLINK_H
#define CNETLINK_H

/// Opens a NETLINK_ROUTE socket subscribed to IPv4/IPv6 address and route changes
/// (RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE),
/// non-blocking and close-on-exec. Returns the descriptor, or -errno on failure
/// (-ENOSYS where netlink does not exist).
int cnetlink_open_route_monitor(void);

#endif
