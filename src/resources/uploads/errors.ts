/** No completed upload has the path a revision names. */
export class UploadNotFound extends Error {}
