/** The host id of the page's own-origin host: it has no relay identity in the page, and what
 *  this device keeps of it (offline queue, snapshot, push) is filed under this id. */
export const LOCAL_HOST = "local";
